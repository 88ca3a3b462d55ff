"""Build hook (setuptools runs it; the project is described in pyproject.toml).

The ``breadcrumb`` package is made of links to the top-level folders
(``breadcrumb/stores -> ../stores``, ...). A checkout made without symbolic links
(``core.symlinks=false``, the Windows default) holds small text files in their place; a
wheel built from it would miss every sub-package and still build. Refuse, in one line.
"""

import sys
from pathlib import Path

LINKED = ("infra", "processors", "query_api", "stores", "streams", "topics")


def unmaterialized(root: Path) -> list[str]:
    """The package's links that are not folders in this checkout."""
    return [name for name in LINKED if not (root / "breadcrumb" / name / "__init__.py").is_file()]


missing = unmaterialized(Path(__file__).resolve().parent)
if missing:
    sys.exit(f"error: breadcrumb/{missing[0]} (and {len(missing) - 1} more) is not a link to "
             f"../{missing[0]}: this checkout has no symbolic links; clone with "
             "`git clone -c core.symlinks=true` (on Windows enable Developer Mode first)")

from setuptools import setup  # noqa: E402  (after the check: it needs no setuptools)

setup()
