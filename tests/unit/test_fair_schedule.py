"""The fair schedule of the embedded log: tenants round-robin, each thread in log order,
and marks that make a restart resume exactly (nothing applied twice, nothing skipped)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.streams.embedded.fair_schedule import CURSOR, THREAD_MARK, FairSchedule
from breadcrumb.streams.embedded.runner import EmbeddedRunner
from breadcrumb.streams.service import HandleResult
from breadcrumb.topics.records import Event, thread_key


class _Log:
    """(seq, thread key) rows, as ``read_log_keys`` returns them."""

    def __init__(self, keys: list[str]) -> None:
        self.rows = [(i + 1, k) for i, k in enumerate(keys)]

    def read_log_keys(self, after: int, limit: int) -> list[tuple[int, str, str]]:
        return [(q, k, "2026-11-30T00:00:00+00:00") for q, k in self.rows if q > after][:limit]


def test_a_late_tenant_is_picked_second_and_each_thread_keeps_its_order() -> None:
    keys = ["a/t1"] * 500 + ["a/t2"] * 300 + ["b/only"]
    sched = FairSchedule(0, {}, scan_chunk=64)
    assert sched.scan(_Log(keys)) == len(keys) and sched.pending == len(keys)
    picked = sched.pick(16)
    assert len(picked) == 16
    assert (801, "b/only") in picked[:2]  # interleaved by tenant: an early stop still serves b
    for key in ("a/t1", "a/t2"):
        seqs = [s for s, k in picked if k == key]
        assert seqs == sorted(seqs) and seqs  # both of a's threads get a share, in order
        assert seqs[0] == min(s for s, k in _Log(keys).rows if k == key)  # the oldest first


def test_marks_cover_threads_ahead_of_the_low_water_mark_and_are_dropped_later() -> None:
    keys = ["a/t"] * 10 + ["b/t"]
    sched = FairSchedule(0, {})
    sched.scan(_Log(keys))
    first = [(1, "a/t"), (11, "b/t")]
    marks = sched.marks_for(first)
    assert marks.low == 1 and marks.set == {THREAD_MARK + "b/t": 11}
    sched.commit(first, marks)
    rest = [(s, "a/t") for s in range(2, 11)]
    later = sched.marks_for(rest)
    assert later.low == 11 and later.set == {} and later.drop == [THREAD_MARK + "b/t"]
    sched.commit(rest, later)
    assert sched.pending == 0 and sched.marks == {}


def test_a_restart_skips_exactly_what_the_marks_cover() -> None:
    keys = ["a/t"] * 5 + ["b/t"] * 2
    sched = FairSchedule(2, {"b/t": 6})  # a/t applied to 2; b/t's 6 applied ahead of it
    sched.scan(_Log(keys))
    assert sched.pending == 4
    assert sorted(sched.pick(10)) == [(3, "a/t"), (4, "a/t"), (5, "a/t"), (7, "b/t")]


class _Batching:
    """Records handled event ids; can batch (no deferred work)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def batched(self, context: object = None) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext(self)  # the block of work: this recorder

    def embeds_slowly(self) -> bool:  # no rehearsal (streams.rehearsal)
        return False

    def handle(self, entry: Event | dict[str, Any], raw_text: str | None = None
               ) -> HandleResult:
        self.seen.append(entry.event_id if isinstance(entry, Event) else "flush")
        return HandleResult("processed")


def _event(user: str, thread: str, n: int) -> dict[str, Any]:
    return {"event_id": f"{user}-{thread}-{n}", "user_id": user, "thread_id": thread,
            "ts": "2026-11-30T00:00:00Z", "role": "user", "kind": "message",
            "content": f"line {n}"}


def _runner(path: Path, service: _Batching, batch: int = 8) -> EmbeddedRunner:
    store = SqliteStore(path)
    store.open()
    return EmbeddedRunner(store, service, lambda: "2026-11-30T00:00:00+00:00",  # type: ignore[arg-type]
                          60.0, batch_entries=batch)


def test_runner_serves_another_tenant_first_and_resumes_exactly_after_a_restart(
        tmp_path: Path) -> None:
    path = tmp_path / "log.sqlite3"
    service = _Batching()
    runner = _runner(path, service)
    big = [_event("bulk", f"t{n % 3}", n) for n in range(60)]
    runner.submit(big)
    runner.submit([_event("small", "one", 0)])
    assert runner.process_available() == 8
    assert "small-one-0" in service.seen  # in the first batch, not after 60 entries
    runner.process_available()
    counters = runner.derived.counters.get_counters()
    assert any(name.startswith(THREAD_MARK) for name in counters)  # threads ahead of low
    before = list(service.seen)
    runner.store.close()

    again = _Batching()
    restarted = _runner(path, again)  # a crash here: only the marks are known
    assert restarted.unprocessed() == 61 - len(before)  # exact before anything is applied
    restarted.drain()
    everything = sorted(before + again.seen)
    assert everything == sorted(e["event_id"] for e in [*big, _event("small", "one", 0)])
    assert restarted.unprocessed() == 0
    for key in {thread_key("bulk", f"t{n}") for n in range(3)}:  # each thread in log order
        mine = [x for x in before + again.seen if x.startswith(key.replace("/", "-") + "-")]
        assert mine == sorted(mine, key=lambda x: int(x.rsplit("-", 1)[1]))
    final = restarted.derived.counters.get_counters()
    assert final[CURSOR] == 61 and not any(n.startswith(THREAD_MARK) for n in final)


def test_a_tenant_with_more_threads_than_its_share_serves_the_oldest_heads_first() -> None:
    keys = [f"a/t{n}" for n in range(40)] * 2  # 40 threads, two entries each
    sched = FairSchedule(0, {})
    sched.scan(_Log(keys))
    first = sched.pick(16)
    assert sorted(s for s, _k in first) == list(range(1, 17))  # the 16 oldest threads' heads
    marks = sched.marks_for(first)
    assert marks.low == 16
    sched.commit(first, marks)
    assert sorted(s for s, _k in sched.pick(16)) == list(range(17, 33))  # then the next 16
