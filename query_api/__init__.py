"""The query_api package, imported as ``breadcrumb.query_api`` (through a link)."""

if __name__ != "breadcrumb.query_api":  # one tree, one name: else every class exists twice
    raise ImportError(f"import breadcrumb.query_api, not {__name__}: the folder query_api/ "
                      "is that package under another name")
