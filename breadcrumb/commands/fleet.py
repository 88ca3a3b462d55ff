"""``breadcrumb fleet``: N simulated coding agents publishing events concurrently.

Each agent works through sessions like a real coding agent: a task from the user,
reading code, file edits, a failing then passing test run, a summary with the exact
values it settled on, and ``session_end``. Content is deterministic with ``--seed``
(timestamps are the wall clock). Events go through the publishing SDK — to Kafka
(``--kafka BOOTSTRAP``) or to ``POST /v1/events`` (``--http URL``, the default) — and
the command prints accepted events per second at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from breadcrumb.clients.sdk import HttpPublisher, Publisher, PublishError
from breadcrumb.settings import Settings

NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://breadcrumb/fleet/v1")
PROJECTS = ("shop-api", "billing-worker", "inventory-svc", "search-ui", "auth-gateway")
MODULES = ("auth/session", "billing/invoice", "export/csv", "search/ranking", "cache/redis",
           "api/orders", "jobs/retry", "config/loader")
ERRORS = ("AssertionError: assert 200 == 429", "KeyError: 'tenant_id'",
          "TypeError: cannot unpack non-iterable NoneType object",
          "ConnectionRefusedError: [Errno 111] Connection refused",
          "ValueError: invalid literal for int() with base 10: ''")
TEST_COMMANDS = ("python -m pytest -q tests/test_{m}.py", "npm test -- {m}.test.ts",
                 "go test ./internal/{m}/...", "cargo test {m}")


def quiet_client_logs() -> None:
    """Per-request INFO lines of httpx / aiokafka would drown the report."""
    for name in ("httpx", "aiokafka"):
        logging.getLogger(name).setLevel(logging.WARNING)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``breadcrumb fleet``."""
    p = sub.add_parser("fleet", help="simulate N coding agents publishing events")
    p.add_argument("--agents", type=int, default=10, help="simulated agents (10)")
    p.add_argument("--seconds", type=float, default=30.0, help="how long to run (30)")
    p.add_argument("--rate", type=float, default=2.0,
                   help="events per second per agent (0: as fast as possible)")
    p.add_argument("--batch", type=int, default=1, help="events per publish call per agent")
    p.add_argument("--users", type=int, default=4, help="tenants the agents belong to")
    p.add_argument("--seed", type=int, default=None,
                   help="deterministic content and event ids (a re-run is all duplicates)")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--http", default=None, help="query service URL (default: settings)")
    target.add_argument("--kafka", default=None, help="Kafka bootstrap: publish directly")
    p.set_defaults(handler=cmd_fleet)


def cmd_fleet(args: argparse.Namespace, settings: Settings) -> int:
    """Run the fleet, print the report as JSON, exit 1 if any publish failed."""
    quiet_client_logs()
    run_id = f"seed{args.seed}" if args.seed is not None else uuid.uuid4().hex[:8]
    report = asyncio.run(run_fleet(args, settings, run_id))
    sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 1 if report["errors"] else 0


@dataclass
class Tally:
    """What the fleet sent and what the target accepted (errors counted, never hidden)."""

    sent: int = 0
    accepted: int = 0
    duplicates: int = 0
    rejected: int = 0
    errors: int = 0
    first_errors: list[str] = field(default_factory=list)

    def error(self, exc: Exception) -> None:
        self.errors += 1
        if len(self.first_errors) < 5:
            self.first_errors.append(str(exc))
            sys.stderr.write(f"breadcrumb fleet: {exc}\n")


async def run_fleet(args: argparse.Namespace, settings: Settings, run_id: str) -> dict[str, Any]:
    """Start the publisher, run every agent until the deadline, close open sessions."""
    publisher: Publisher | HttpPublisher
    if args.kafka:
        from breadcrumb.infra.cluster import declare_topics

        settings = settings.with_overrides(kafka_bootstrap=args.kafka)
        await declare_topics(settings)  # idempotent; the worker may not have run yet
        publisher = Publisher(args.kafka, settings=settings)
        target = f"kafka {args.kafka} topic {publisher.topic}"
    else:
        url = args.http or f"http://{settings.host}:{settings.port}"
        publisher, target = HttpPublisher(url, batch_size=max(args.batch, 1)), f"http {url}"
    tally = Tally()
    started = time.perf_counter()
    async with publisher:
        agents = [SimulatedAgent(n, run_id, args.seed, args.users) for n in range(args.agents)]
        deadline = asyncio.get_running_loop().time() + args.seconds
        await asyncio.gather(*(_drive(a, publisher, tally, deadline, args) for a in agents))
    seconds = time.perf_counter() - started
    return {"target": target, "run_id": run_id, "agents": args.agents,
            "seconds": round(seconds, 2), "events_sent": tally.sent,
            "accepted": tally.accepted, "duplicates": tally.duplicates,
            "rejected": tally.rejected, "errors": tally.errors,
            "accepted_per_second": round(tally.accepted / seconds, 1) if seconds else 0.0,
            "first_errors": tally.first_errors}


async def _drive(agent: SimulatedAgent, publisher: Publisher | HttpPublisher, tally: Tally,
                 deadline: float, args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    start, sent = loop.time(), 0
    batch = max(args.batch, 1)
    while loop.time() < deadline:
        events = [agent.next_event() for _ in range(batch)]
        await _publish(publisher, events, tally)
        sent += batch
        if args.rate > 0:
            await asyncio.sleep(max(0.0, start + sent / args.rate - loop.time()))
    closing = agent.close_session()
    if closing is not None:
        await _publish(publisher, [closing], tally)


async def _publish(publisher: Publisher | HttpPublisher, events: list[dict[str, Any]],
                   tally: Tally) -> None:
    tally.sent += len(events)
    try:
        answer = await publisher.publish_many(events)
    except PublishError as exc:
        tally.error(exc)
        return
    if isinstance(answer, dict):  # HTTP: the server's counts
        tally.accepted += answer["accepted"]
        tally.duplicates += answer["duplicates"]
        tally.rejected += len(answer["rejected"])
    else:  # Kafka: acknowledged by every in-sync replica
        tally.accepted += len(answer)


class SimulatedAgent:
    """One coding agent: endless sessions of realistic steps, one event at a time."""

    def __init__(self, number: int, run_id: str, seed: int | None, users: int) -> None:
        self.number = number
        self.run_id = run_id
        self.rng = random.Random(f"{seed}/{number}" if seed is not None else None)
        user = number % max(users, 1)
        self.user_id = f"fleet-user-{user}"
        self.agent_id = f"sim-agent-{number:03d}"
        self.session = 0
        self.step = 0
        self._steps: Iterator[tuple[str, str, str, str | None, dict[str, Any]]] = iter(())
        self.open = False
        # one project per user: its agents' sessions set the same settings again (a fact
        # is superseded within its project only); the users' projects differ
        self.project = PROJECTS[user % len(PROJECTS)]

    @property
    def thread_id(self) -> str:
        return f"{self.run_id}-a{self.number:03d}-s{self.session:04d}"

    def next_event(self) -> dict[str, Any]:
        """The next event of the current session (starting a new session when done)."""
        step = next(self._steps, None)
        if step is None:
            self.session += 1
            self.step = 0
            self._steps = iter(session_script(self.rng))
            step = next(self._steps)
        return self._event(*step)

    def close_session(self) -> dict[str, Any] | None:
        """A ``session_end`` for a session cut short by the end of the run."""
        if not self.open:
            return None
        return self._event("system", "session_end", "agent stopped", None, {})

    def _event(self, role: str, kind: str, content: str, tool: str | None,
               attrs: dict[str, Any]) -> dict[str, Any]:
        ident = uuid.uuid5(NAMESPACE, f"{self.user_id}/{self.thread_id}/{self.step}")
        self.step += 1
        self.open = kind != "session_end"
        event: dict[str, Any] = {
            "event_id": str(ident), "user_id": self.user_id, "project_id": self.project,
            "agent_id": self.agent_id, "thread_id": self.thread_id,
            "ts": datetime.now(UTC).isoformat().replace("+00:00", "Z"), "role": role,
            "kind": kind, "content": content}
        if tool:
            event["tool"] = tool
        if attrs:
            event["attrs"] = attrs
        return event


def session_script(rng: random.Random) -> list[tuple[str, str, str, str | None,
                                                     dict[str, Any]]]:
    """The steps of one coding session with planted exact values (ports, env vars, …)."""
    module = rng.choice(MODULES)
    short = module.split("/")[1]
    path = f"src/{module}.py"
    port = rng.randint(1024, 65000)
    env = f"{short.upper()}_{rng.choice(('TIMEOUT_MS', 'MAX_RETRIES', 'POOL_SIZE', 'URL'))}"
    value = rng.choice((str(rng.randint(2, 5000)), f"redis://cache-{rng.randint(1, 9)}:{port}/0"))
    error = rng.choice(ERRORS)
    test = rng.choice(TEST_COMMANDS).format(m=short)
    func = f"{rng.choice(('load', 'apply', 'resolve', 'flush'))}_{short}"
    steps: list[tuple[str, str, str, str | None, dict[str, Any]]] = [
        ("user", "message", f"{func} in {path} breaks under load. Set {env}={value} and make "
         f"`{test}` pass.", None, {}),
        ("assistant", "message", f"I'll read {path} and run the tests first.", None, {}),
        ("assistant", "tool_call", f"rg -n \"def {func}\" {path}", "bash",
         {"command": f"rg -n \"def {func}\" {path}"}),
        ("tool", "tool_result", f"{rng.randint(10, 300)}:def {func}(config):", "bash",
         {"exit_code": 0}),
        ("assistant", "tool_call", test, "bash", {"command": test}),
        ("tool", "test_result", f"FAILED tests/test_{short}.py::test_{func} - {error}\n"
         f"1 failed, {rng.randint(3, 40)} passed", "bash", {"exit_code": 1, "command": test}),
        ("assistant", "message", f"The failure is `{error}`: {func} ignores {env}. "
         f"Reading it from the environment with default {value}.", None, {}),
        ("assistant", "file_edit", f"--- a/{path}\n+++ b/{path}\n@@\n-    timeout = 30\n"
         f"+    {short} = os.environ.get(\"{env}\", \"{value}\")", "edit", {"path": path}),
        ("assistant", "tool_call", test, "bash", {"command": test}),
        ("tool", "test_result", f"{rng.randint(4, 41)} passed in {rng.uniform(0.2, 9):.2f}s",
         "bash", {"exit_code": 0, "command": test}),
        ("assistant", "message", f"Done: {func} now reads {env} (default {value}); service "
         f"port stays {port}. `{test}` passes.", None, {}),
        ("system", "session_end", "session finished", None, {}),
    ]
    return steps
