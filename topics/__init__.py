"""The topics package, imported as ``breadcrumb.topics`` (through a link)."""

if __name__ != "breadcrumb.topics":  # one tree, one name: else every class exists twice
    raise ImportError(f"import breadcrumb.topics, not {__name__}: the folder topics/ "
                      "is that package under another name")
