"""The data dir lock (real flock between real processes) and the disk check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from breadcrumb.stores import data_dir
from breadcrumb.stores.data_dir import MB, DataDirBusy, StartupError

HOLD = """
import sys, time
from pathlib import Path
from breadcrumb.stores import data_dir
data_dir.set_role("holder")
lock = data_dir.try_acquire(Path(sys.argv[1]))
print("took" if lock else "busy", flush=True)
if lock and sys.argv[2] == "hold":
    sys.stdin.readline()
"""


def other_process(path: Path, hold: bool) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", HOLD, str(path), "hold" if hold else "try"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_reentrant_in_process_and_released_by_the_last_reference(tmp_path: Path) -> None:
    first = data_dir.try_acquire(tmp_path)
    second = data_dir.try_acquire(tmp_path)
    assert first is not None and first is second and first.count == 2
    first.release()
    probe = other_process(tmp_path, hold=False)
    assert probe.communicate(timeout=60)[0].strip() == "busy"  # still held once
    first.release()
    assert (tmp_path / data_dir.LOCK_NAME).read_bytes() == b""  # no stale owner record
    probe = other_process(tmp_path, hold=False)
    assert probe.communicate(timeout=60)[0].strip() == "took"


def test_busy_names_the_owner_and_frees_when_it_exits(tmp_path: Path) -> None:
    holder = other_process(tmp_path, hold=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "took"
        assert data_dir.try_acquire(tmp_path) is None
        with pytest.raises(DataDirBusy) as busy:
            data_dir.acquire(tmp_path)
        assert busy.value.owner is not None and busy.value.owner.pid == holder.pid
        assert f"pid {holder.pid}" in str(busy.value) and "`holder`" in str(busy.value)
    finally:
        holder.kill()  # no clean release: the kernel drops the lock with the process
        holder.wait(30)
    lock = data_dir.acquire(tmp_path)
    assert lock.owner.pid != holder.pid
    lock.release()


def test_set_url_announces_and_release_removes_the_marker(tmp_path: Path) -> None:
    lock = data_dir.acquire(tmp_path)
    lock.set_url("http://127.0.0.1:1")
    owner = data_dir.read_owner(tmp_path)
    assert owner is not None and owner.url == "http://127.0.0.1:1"
    assert (tmp_path / data_dir.MARKER).exists()
    lock.release()
    assert not (tmp_path / data_dir.MARKER).exists()


def test_disk_check_uses_the_threshold(tmp_path: Path) -> None:
    data_dir.check_disk(tmp_path, 256, free=lambda _: 300 * MB)
    data_dir.check_disk(tmp_path, 0, free=lambda _: 0)  # 0 = off
    with pytest.raises(StartupError, match="only 100 MB free"):
        data_dir.check_disk(tmp_path, 256, free=lambda _: 100 * MB)
