"""Private data (issue 12): data files 0600, folders 0700, for the user that runs Breadcrumb.

:func:`private_umask` makes everything the process creates from then on private (SQLite's
``-wal`` / ``-shm`` files, Qdrant Edge shards, cold objects, markers); :func:`secure_tree`
tightens what already exists under a data dir (one made by an older version, or before
the umask was set). Symbolic links are left alone, never followed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700
UMASK = 0o077


def private_umask() -> int:
    """Set the process umask to 077; returns the previous one."""
    return os.umask(UMASK)


def secure_tree(root: Path) -> int:
    """chmod ``root`` and everything under it: folders 0700, files 0600 (only bits are
    removed: an executable stays executable for its owner). Returns how many changed."""
    if not root.exists():
        return 0
    changed = _secure(root)
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in (*dirs, *files):
            changed += _secure(Path(folder) / name)
    return changed


def _secure(path: Path) -> int:
    try:
        info = path.lstat()
    except FileNotFoundError:  # removed meanwhile (a temp file, a -shm file)
        return 0
    if stat.S_ISLNK(info.st_mode):
        return 0
    mode = stat.S_IMODE(info.st_mode)
    wanted = mode & (DIR_MODE if stat.S_ISDIR(info.st_mode) else FILE_MODE | 0o100)
    if wanted == mode:
        return 0
    try:
        os.chmod(path, wanted)
    except (FileNotFoundError, PermissionError):
        return 0
    return 1
