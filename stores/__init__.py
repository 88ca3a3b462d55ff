"""The stores package, imported as ``breadcrumb.stores`` (through a link)."""

if __name__ != "breadcrumb.stores":  # one tree, one name: else every class exists twice
    raise ImportError(f"import breadcrumb.stores, not {__name__}: the folder stores/ "
                      "is that package under another name")
