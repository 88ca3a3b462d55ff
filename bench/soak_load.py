"""The soak bench's load: N publishing agents and M recallers, as a real client would run.

An agent makes events at its steady rate whatever the service does; it POSTs what it has
not yet had acknowledged (up to ``BATCH`` events per request), keeps it on any failure
(refused connection, timeout, 5xx) and retries after a second. An event counts as
acknowledged when its POST answered 200/202 and did not reject it; the ledger keeps every
acknowledged id (to count lost and duplicated events in the store at the end) and the
time of each acknowledgement. A recaller asks about a value an agent planted, waits,
asks again; it records each answer's latency and whether the exact value came back.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from bench.soak_events import SoakAgent

BATCH = 200  # events per POST when an agent has a backlog
JSON = {"content-type": "application/json"}


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


@dataclass
class Ledger:
    """What the agents and recallers did (one event loop: no locks needed)."""

    generated: int = 0
    acked: set[tuple[str, str]] = field(default_factory=set)
    ack_times: list[float] = field(default_factory=list)  # monotonic, one per ack
    answered_duplicate: int = 0  # events the service said it already had (retries)
    rejected: int = 0
    post_errors: int = 0
    pending: dict[int, int] = field(default_factory=dict)  # agent -> unacknowledged events
    recalls: list[tuple[float, float]] = field(default_factory=list)  # (monotonic, ms)
    recall_hits: int = 0
    recall_errors: int = 0
    bytes_sent: int = 0

    def ack(self, events: list[dict[str, Any]], answer: dict[str, Any], now: float) -> None:
        refused = {int(r.get("position", -1)) for r in answer.get("rejected") or []}
        self.rejected += len(refused)
        self.answered_duplicate += int(answer.get("duplicates") or 0)
        for i, event in enumerate(events):
            if i not in refused:
                self.acked.add((event["user_id"], event["event_id"]))
                self.ack_times.append(now)

    def backlog(self) -> int:
        return sum(self.pending.values())


async def agent_loop(agent: SoakAgent, url: Callable[[], str], ledger: Ledger, rate: float,
                     stop: asyncio.Event, http: httpx.AsyncClient) -> None:
    """Publish at ``rate`` events/s until ``stop``; then close the session and flush."""
    loop = asyncio.get_running_loop()
    started, made, pending, closed = loop.time(), 0, [], False
    while True:
        if not stop.is_set():
            while started + made / rate <= loop.time():
                pending.append(agent.next_event())
                made += 1
                ledger.generated += 1
        elif not closed:
            closed = True
            last = agent.close_session()
            if last is not None:
                pending.append(last)
                ledger.generated += 1
        ledger.pending[agent.number] = len(pending)
        if pending:
            chunk = pending[:BATCH]
            body = orjson.dumps({"events": chunk})
            try:
                answer = await http.post(f"{url()}/v1/events", content=body, headers=JSON)
                ok = answer.status_code in (200, 202)
            except httpx.HTTPError:
                ok = False
            if ok:
                ledger.ack(chunk, answer.json(), loop.time())
                ledger.bytes_sent += len(body)
                del pending[:len(chunk)]
                ledger.pending[agent.number] = len(pending)
                if pending:
                    continue
            else:
                ledger.post_errors += 1
                await asyncio.sleep(1.0)
                continue
        if stop.is_set():
            return
        await asyncio.sleep(max(0.0, started + made / rate - loop.time()))


async def recaller_loop(agents: list[SoakAgent], url: Callable[[], str], ledger: Ledger,
                        stop: asyncio.Event, http: httpx.AsyncClient, pause: float,
                        seed: int) -> None:
    """Ask about planted values until ``stop``, ``pause`` s between questions."""
    rng = random.Random(seed)
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        agent = rng.choice(agents)
        question = agent.question()
        if question is None:
            await asyncio.sleep(pause)
            continue
        query, value = question
        started = time.perf_counter()
        try:
            answer = await http.post(f"{url()}/v1/recall",
                                     json={"user_id": agent.user_id, "query": query})
            ok = answer.status_code == 200
        except httpx.HTTPError:
            ok = False
        if ok:
            ledger.recalls.append((loop.time(), (time.perf_counter() - started) * 1000))
            ledger.recall_hits += value in answer.text
        else:
            ledger.recall_errors += 1
        await asyncio.sleep(pause)


@dataclass
class Window:
    """Cursor over the ledger: what happened since the previous sample."""

    acks: int = 0
    recalls: int = 0
    at: float = field(default_factory=time.monotonic)

    def take(self, ledger: Ledger) -> dict[str, Any]:
        now = time.monotonic()
        acks = len(ledger.ack_times)
        recalls = [ms for _t, ms in ledger.recalls[self.recalls:]]
        seconds = max(now - self.at, 1e-6)
        out = {"acked_per_s": (acks - self.acks) / seconds, "recalls": len(recalls),
               "recall_p50_ms": pct(recalls, 0.5), "recall_p95_ms": pct(recalls, 0.95),
               "recall_max_ms": max(recalls) if recalls else None}
        self.acks, self.recalls, self.at = acks, len(ledger.recalls), now
        return out
