"""Build a Qdrant Edge shard's HNSW graphs in a child process, off the service.

qdrant-edge-py keeps the GIL while ``EdgeShard.optimize()`` runs (measured: the
embedded service answered nothing for 6-23 s at 58k-210k points). So
:meth:`stores.vectors.edge.index.QdrantEdgeIndex.optimize` never optimizes the live
shard: it copies the flushed shard directory to a new *generation*
(``memories.g3``), runs this module as ``python -m breadcrumb.stores.vectors.edge.index_build``
on the copy (niced, its own interpreter and GIL), replays the writes that arrived
meanwhile into the built copy, and swaps it in. ``shards.json`` in the vectors dir
names each collection's current generation; it is replaced atomically after the
built copy holds every write, so a crash at any moment leaves either the old or
the new complete shard current, and :func:`remove_strays` deletes the other.

    python -m breadcrumb.stores.vectors.edge.index_build DIR --dim 384 [--threshold-kb N]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from breadcrumb.stores.vectors.edge.format import load_config

POINTER = "shards.json"
_GENERATION = re.compile(r"^(?P<name>[a-z]+)(\.g(?P<n>\d+))?$")


class BuildError(RuntimeError):
    """The child process failed; the live shard is untouched."""


def current_dirs(root: Path, names: Iterable[str]) -> dict[str, str]:
    """Directory name of each collection's current shard (``name`` when never rebuilt)."""
    pointer = root / POINTER
    saved = json.loads(pointer.read_text()) if pointer.exists() else {}
    return {name: str(saved.get(name, name)) for name in names}


def write_pointer(root: Path, dirs: dict[str, str]) -> None:
    """Replace ``shards.json`` atomically (write, fsync, rename)."""
    tmp = root / f"{POINTER}.tmp"
    with tmp.open("w") as f:
        json.dump(dirs, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, root / POINTER)


def next_generation(root: Path, name: str) -> str:
    """A directory name for the next built copy of ``name`` that does not exist yet."""
    used = [int(m["n"]) for p in root.iterdir() if (m := _GENERATION.match(p.name))
            and m["name"] == name and m["n"]] if root.exists() else []
    return f"{name}.g{max(used, default=0) + 1}"


def remove_strays(root: Path, current: dict[str, str]) -> list[str]:
    """Delete generations of these collections that are not current (interrupted builds,
    old shards after a swap); returns the removed names."""
    removed: list[str] = []
    if not root.exists():
        return removed
    keep = set(current.values())
    for path in root.iterdir():
        m = _GENERATION.match(path.name)
        if m and m["name"] in current and path.name not in keep and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
    return removed


def unindexed(info: Any) -> int:
    """Dense vectors of a shard not in an HNSW graph yet (``EdgeShard.info()``: every
    point has a dense and a sparse vector; sparse ones count as indexed at once)."""
    return 2 * int(info.points_count) - int(info.indexed_vectors_count)


def run_child(directories: Sequence[Path], dim: int, threshold_kb: int | None,
              started: Callable[[subprocess.Popen[bytes]], None] | None = None) -> bool:
    """Optimize the shards in ``directories`` in one child process; True if any changed.

    ``started`` receives the process (so a closing index can terminate it)."""
    cmd = [sys.executable, "-m", "breadcrumb.stores.vectors.edge.index_build",
           *map(str, directories), "--dim", str(dim), "--parent", str(os.getpid())]
    if threshold_kb is not None:
        cmd += ["--threshold-kb", str(threshold_kb)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if started is not None:
        started(proc)
    out, err = proc.communicate()
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        raise BuildError(f"index build exited {proc.returncode}: {' | '.join(tail)}")
    return bool(json.loads(out.decode().strip().splitlines()[-1])["changed"])


def _build(directories: Sequence[str], dim: int, threshold_kb: int | None) -> dict[str, object]:
    changed, started = False, time.perf_counter()
    for directory in directories:
        shard = qe.EdgeShard.load(directory, load_config(Path(directory), dim, threshold_kb))
        changed = bool(shard.optimize()) or changed
        shard.flush()
        shard.close()
    return {"changed": changed, "seconds": round(time.perf_counter() - started, 3)}


def _die_with_parent(parent: int | None) -> None:
    """Linux: SIGKILL this build when the service dies, so no orphan writes into a copy the
    restarted service deletes or reuses (its own build then starts over)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:  # it died before prctl took effect
        os._exit(1)


def yield_to_service(parent: int | None = None) -> None:
    """Low CPU priority (nice 10; 19 starves the build on a busy box) and, on a multi-core
    machine, one core only: the service that spawned this build keeps a core of its own
    (HNSW construction would take them all)."""
    _die_with_parent(parent)
    if hasattr(os, "nice"):
        os.nice(10)
    if hasattr(os, "sched_getaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        if len(cores) > 1:
            os.sched_setaffinity(0, {cores[-1]})


def main(argv: Sequence[str] | None = None) -> None:
    """Child entry point: optimize each shard directory, print one JSON line."""
    parser = argparse.ArgumentParser(description="optimize Qdrant Edge shard copies")
    parser.add_argument("directories", nargs="+")
    parser.add_argument("--dim", type=int, required=True)
    parser.add_argument("--threshold-kb", type=int, default=None)
    parser.add_argument("--parent", type=int, default=None, help="pid of the service")
    args = parser.parse_args(argv)
    yield_to_service(args.parent)
    sys.stdout.write(json.dumps(_build(args.directories, args.dim, args.threshold_kb)) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
