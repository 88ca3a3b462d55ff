"""One owner per embedded data dir, and start-up checks that explain themselves.

The owner holds an exclusive ``flock`` on ``DATA_DIR/breadcrumb.lock`` for as long as its
stores are open; the file says who it is (pid, host, command, a random ``instance`` id
and, for ``breadcrumb serve``, the URL it answers on). Every other process either talks
to that URL (after checking that the service there reports the same ``instance``) or
stops with one line naming the pid. The lock is re-entrant inside one process (a CLI
command that takes it and then builds its runtime), and the kernel drops it when the
process dies, so a ``kill -9`` never leaves a stale owner behind.

Start-up failures are :class:`StartupError`: one line naming the file and the remedy.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import socket
import sys
import threading
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

LOCK_NAME = "breadcrumb.lock"
MARKER = "server.json"
MB = 1024 * 1024
PROCESS_INSTANCE = uuid.uuid4().hex  # identity of a service that owns no data dir lock

FreeSpace = Callable[[Path], int]


class StartupError(RuntimeError):
    """A start-up failure explained in one line (file + remedy); no traceback needed."""


class DataDirBusy(StartupError):
    """The data dir is owned by another live process."""

    def __init__(self, data_dir: Path, owner: Owner | None) -> None:
        self.data_dir = data_dir
        self.owner = owner
        super().__init__(busy_message(data_dir, owner))


@dataclass(frozen=True)
class Owner:
    """What the lock file says about the process holding it."""

    pid: int
    host: str
    command: str
    instance: str
    data_dir: str
    started_at: str
    url: str | None = None

    def describe(self) -> str:
        where = f" on {self.url}" if self.url else ""
        return f"pid {self.pid} on {self.host} (`{self.command}`{where})"


def busy_message(data_dir: Path, owner: Owner | None) -> str:
    if owner is None:
        return (f"data dir {data_dir} is in use by another process (see {data_dir / LOCK_NAME});"
                " stop it or choose another --data-dir")
    if owner.url:
        return (f"data dir {data_dir} is already served by {owner.describe()}; stop it first, "
                "or talk to it with --url")
    return (f"data dir {data_dir} is in use by {owner.describe()}, which serves no HTTP API; "
            "wait for it or stop it (or run `breadcrumb serve` on this data dir so other "
            "commands can share it)")


_role = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"


def set_role(command: str) -> None:
    """Name this process in lock files (``breadcrumb serve``, ``breadcrumb mcp`` ...)."""
    global _role
    _role = command


def pid_alive(pid: int) -> bool:
    """True when a process with this pid exists (signal 0)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def free_bytes(path: Path) -> int:
    """Free bytes for unprivileged writers on the file system holding ``path``."""
    return int(shutil.disk_usage(path).free)


def check_disk(data_dir: Path, min_free_mb: int, free: FreeSpace = free_bytes) -> None:
    """Refuse to open below ``min_free_mb`` (SQLite's shared memory file dies of SIGBUS
    when the disk fills up under it)."""
    have = free(data_dir)
    if min_free_mb > 0 and have < min_free_mb * MB:
        raise StartupError(
            f"only {have // MB} MB free on the disk holding {data_dir} (need at least "
            f"{min_free_mb} MB, BREADCRUMB_MIN_FREE_DISK_MB): free some space or move the "
            "data dir")


def read_owner(data_dir: Path) -> Owner | None:
    """The lock file's owner record (None when absent, empty or unreadable)."""
    try:
        raw = (data_dir / LOCK_NAME).read_bytes()
        return Owner(**orjson.loads(raw)) if raw.strip() else None
    except (OSError, ValueError, TypeError):
        return None


class DataDirLock:
    """The exclusive lock of one data dir, held by this process (re-entrant)."""

    def __init__(self, data_dir: Path, fd: int, owner: Owner) -> None:
        self.data_dir = data_dir
        self._fd = fd
        self.owner = owner
        self.count = 1

    @property
    def instance(self) -> str:
        return self.owner.instance

    def write_owner(self) -> None:
        """Write the owner into the lock file (what ``DataDirBusy`` names to another
        process)."""
        data = orjson.dumps(asdict(self.owner))
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def set_url(self, url: str) -> None:
        """Announce the HTTP service of this owner (lock file and ``server.json``)."""
        self.owner = Owner(**{**asdict(self.owner), "url": url})
        self.write_owner()
        marker = {"url": url, "pid": self.owner.pid, "instance": self.owner.instance,
                  "data_dir": self.owner.data_dir}
        tmp = self.data_dir / f".{MARKER}.{os.getpid()}"
        tmp.write_bytes(orjson.dumps(marker))
        os.replace(tmp, self.data_dir / MARKER)

    def release(self) -> None:
        """Drop one reference; the last one removes ``server.json`` and unlocks."""
        with _registry_lock:
            self.count -= 1
            if self.count > 0:
                return
            _held.pop(self.data_dir, None)
            if self.owner.url:
                _remove_marker(self.data_dir, self.owner.instance)
            try:
                os.ftruncate(self._fd, 0)  # before unlocking: a new owner may write next
            except OSError:
                pass
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)


_held: dict[Path, DataDirLock] = {}
_registry_lock = threading.Lock()


def _remove_marker(data_dir: Path, instance: str) -> None:
    marker = data_dir / MARKER
    try:
        if orjson.loads(marker.read_bytes()).get("instance") == instance:
            marker.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def _unwritable(data_dir: Path, path: Path, exc: OSError) -> StartupError:
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StartupError(f"data dir {data_dir} is not writable (cannot open {path}: "
                            f"{exc.strerror}): make it writable or choose another --data-dir")
    return StartupError(f"cannot open {path} ({exc.strerror}): check the data dir {data_dir}")


def try_acquire(data_dir: Path) -> DataDirLock | None:
    """Take the data dir's lock, or return None when another process holds it.

    Raises :class:`StartupError` when the dir cannot be created or written.
    """
    key = Path(os.path.abspath(data_dir))
    with _registry_lock:
        held = _held.get(key)
        if held is not None:
            held.count += 1
            return held
        try:
            key.mkdir(parents=True, exist_ok=True)
            fd = os.open(key / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise _unwritable(key, key / LOCK_NAME, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        owner = Owner(pid=os.getpid(), host=socket.gethostname(), command=_role,
                      instance=uuid.uuid4().hex, data_dir=str(key),
                      started_at=datetime.now(UTC).isoformat())
        lock = DataDirLock(key, fd, owner)
        try:
            lock.write_owner()
        except OSError as exc:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            raise _unwritable(key, key / LOCK_NAME, exc) from None
        _held[key] = lock
        return lock


def acquire(data_dir: Path) -> DataDirLock:
    """Take the lock or raise :class:`DataDirBusy` naming the owner."""
    lock = try_acquire(data_dir)
    if lock is None:
        raise DataDirBusy(Path(os.path.abspath(data_dir)), read_owner(data_dir))
    return lock


def held_by_this_process(data_dir: Path) -> DataDirLock | None:
    """This process's lock of the data dir, if it holds it."""
    return _held.get(Path(os.path.abspath(data_dir)))


def identity(data_dir: Path) -> dict[str, Any]:
    """``{"instance", "data_dir"}`` of this process's ownership (for ``/healthz``)."""
    lock = held_by_this_process(data_dir)
    return {"instance": lock.instance if lock else PROCESS_INSTANCE,
            "data_dir": str(Path(os.path.abspath(data_dir)))}


def sqlite_failure(path: Path, exc: Exception) -> StartupError:
    """A SQLite open/probe error as one line naming the file and the remedy."""
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return StartupError(f"{path} is read-only ({text}): make it and its folder writable")
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return StartupError(
            f"{path} is corrupt ({text}): restore it from a backup, or salvage it with "
            f"`sqlite3 {path} .recover | sqlite3 NEW.sqlite3` and put NEW.sqlite3 in its place")
    return StartupError(f"cannot open {path} ({text}): check the file and the disk")


def index_failure(path: Path, exc: Exception) -> StartupError:
    """A Qdrant Edge shard that does not load, as one line with the remedy."""
    text = " ".join(str(exc).split())[:300]
    return StartupError(
        f"vector index {path} cannot be opened ({text}): it is derived data; move that "
        "folder aside, start again and run `breadcrumb replay` to rebuild it from the event log")
