"""The processors package, imported as ``breadcrumb.processors`` (through a link)."""

if __name__ != "breadcrumb.processors":  # one tree, one name: else every class exists twice
    raise ImportError(f"import breadcrumb.processors, not {__name__}: the folder processors/ "
                      "is that package under another name")
