"""The infra package, imported as ``breadcrumb.infra`` (through a link)."""

if __name__ != "breadcrumb.infra":  # one tree, one name: else every class exists twice
    raise ImportError(f"import breadcrumb.infra, not {__name__}: the folder infra/ "
                      "is that package under another name")
