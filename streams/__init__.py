"""The streams package, imported as ``breadcrumb.streams`` (through a link)."""

if __name__ != "breadcrumb.streams":  # one tree, one name: else every class exists twice
    raise ImportError(f"import breadcrumb.streams, not {__name__}: the folder streams/ "
                      "is that package under another name")
