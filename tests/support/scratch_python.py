"""A throw-away Python that refuses installs outside a virtualenv (PEP 668), for tests.

The running interpreter's binary is copied into ``DIR/bin``; ``DIR/lib/pythonX.Y`` holds
symlinks to its standard library plus an ``EXTERNALLY-MANAGED`` marker, so pip treats
``DIR`` as a distribution-managed Python (Debian 12+, Ubuntu 23.04+). ``site-packages``
holds only pip, so nothing installed by accident reaches the real interpreter.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

MARKER = """[externally-managed]
Error=This scratch Python is externally managed (a test of PEP 668): use a virtualenv.
"""


def scratch_python(root: Path) -> Path:
    """Build the scratch interpreter under ``root``; returns its ``bin/python3``."""
    base = Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
    stdlib = Path(sysconfig.get_paths(vars={"base": sys.base_prefix,
                                            "installed_base": sys.base_prefix})["stdlib"])
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    (root / "bin").mkdir(parents=True)
    python = root / "bin" / "python3"
    shutil.copy2(base, python)
    (root / "bin" / version).symlink_to("python3")
    lib = root / "lib" / version
    lib.mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name not in ("site-packages", "EXTERNALLY-MANAGED"):
            (lib / entry.name).symlink_to(entry)
    site = lib / "site-packages"
    site.mkdir()
    real_site = Path(sysconfig.get_paths(vars={"base": sys.base_prefix,
                                               "platbase": sys.base_prefix})["purelib"])
    if (real_site / "pip").is_dir():
        (site / "pip").symlink_to(real_site / "pip")
    (lib / "EXTERNALLY-MANAGED").write_text(MARKER)
    shared = Path(sys.base_prefix) / "lib"
    for libpython in shared.glob("libpython3*.so*"):  # a shared-library build needs its .so
        (root / "lib" / libpython.name).symlink_to(libpython)
    return python
