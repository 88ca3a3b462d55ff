"""RecallService with in-memory ports: score parts, time preference, levels, usage."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from breadcrumb.query_api.models import RecallRequest
from breadcrumb.query_api.recall import RecallService, ScoreWeights
from breadcrumb.query_api.recall.stages import STAGES
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.ports import Hit, SearchFilter, SparseVector
from breadcrumb.topics.records import Event, Observation, SourceRange

PARTS = {"vector", "keyword", "tag", "importance", "recency", "stale_penalty", "passage"}


def _memory(mid: str, thread: str, ts: str, summary: str, hints: tuple[str, ...]) -> Observation:
    return Observation(id=mid, user_id="u", project_id=None, summary=summary,
                       source_range=SourceRange(thread, 0, 0), tags=(), query_hints=hints,
                       retrieve_when="", importance=0.5, created_at=ts,
                       metadata={"value_kinds": ["env", "port"]})


class FakeStores:
    """Index + memory store + raw store: every memory is a hit with the same scores."""

    def __init__(self, memories: list[Observation], events: dict[str, Event]) -> None:
        self.memories = {m.id: m for m in memories}
        self.events = events
        self.usage: list[str] = []

    def search_memories(self, flt: SearchFilter, k: int, dense: Sequence[float] | None = None,
                        sparse: SparseVector | None = None) -> list[Hit]:
        assert flt.user_id == "u"
        return [Hit(m.id, 0.8) for m in self.memories.values()]

    def search_chunks(self, flt: SearchFilter, k: int, dense: Sequence[float] | None = None,
                      sparse: SparseVector | None = None) -> list[Hit]:
        return []  # no chunk index: recall must fall back to the raw events (level 2)

    def get_memories(self, user_id: str, ids: Sequence[str]) -> list[Observation]:
        return [self.memories[i] for i in ids if i in self.memories]

    def get_range(self, user_id: str, thread: str, start: int, end: int) -> list[Event]:
        return [self.events[thread]]

    def get_event(self, user_id: str, event_id: str) -> Event | None:
        return next((e for e in self.events.values() if e.event_id == event_id), None)

    def record_usage(self, user_id: str, ids: Sequence[str], at: str) -> None:
        self.usage.extend(ids)


def _service() -> tuple[RecallService, FakeStores]:
    def ev(thread: str, text: str) -> Event:
        return Event(f"{thread}-0", "u", thread, "2024-05-01T00:00:00Z", "assistant",
                     "file_edit", text, index=0)

    stores = FakeStores(
        [_memory("old", "a", "2024-05-01T00:00:00Z", "db port set", ("DB_PORT=5432",)),
         _memory("new", "b", "2024-05-03T00:00:00Z", "db port set", ("DB_PORT=6432",))],
        {"a": ev("a", "+DB_PORT=5432\nunrelated"), "b": ev("b", "+DB_PORT=6432\nunrelated")},
    )
    fake: Any = stores
    clock = lambda: datetime(2026, 1, 1, tzinfo=UTC)  # noqa: E731
    return RecallService(fake, fake, fake, HashEmbedder(), ScoreWeights(), clock), stores


def test_time_preference_orders_equal_candidates() -> None:
    service, _ = _service()
    now = service.recall(RecallRequest(user_id="u", query="which DB_PORT do we use now?"))
    first = service.recall(RecallRequest(user_id="u", query="which DB_PORT did we use first?"))
    assert [m["id"] for m in now["memories"]] == ["new", "old"]
    assert [m["id"] for m in first["memories"]] == ["old", "new"]
    assert all(set(m["score_parts"]) == PARTS for m in now["memories"])


def test_level_2_from_raw_events_and_usage_recorded() -> None:
    service, stores = _service()
    answer = service.recall(RecallRequest(user_id="u", query="which DB_PORT do we use now?"))
    assert answer["classification"] == "exact_value_needed"
    assert answer["level"] == 2
    assert answer["evidence"][0]["extracted_text"].splitlines()[0] == "+DB_PORT=6432"
    assert "unrelated" not in answer["evidence"][0]["extracted_text"]
    assert answer["evidence"][0]["ts"] == "2024-05-01T00:00:00Z"  # the line's event time
    assert answer["evidence"][0]["event_ts"] == {"b-0": "2024-05-01T00:00:00Z"}
    service.flush_usage()  # uses are written off the answer's path (query_api.recall.usage)
    assert stores.usage == ["new", "old"]


def test_every_answer_carries_its_stage_timings() -> None:
    service, _ = _service()
    for mode in ("auto", "summary", "source"):
        answer = service.recall(RecallRequest(user_id="u", query="DB_PORT now", mode=mode))
        timings = answer["timings_ms"]
        assert list(timings) == [*STAGES, "total"]
        assert all(ms >= 0 for ms in timings.values())
        assert timings["total"] == answer["latency_ms"]
        # the stages follow each other: together they are the whole, never more
        assert sum(timings[s] for s in STAGES) <= timings["total"] + 0.01


def test_summary_mode_stays_at_level_0() -> None:
    service, _ = _service()
    answer = service.recall(RecallRequest(user_id="u", query="DB_PORT", mode="summary"))
    assert answer["level"] == 0 and answer["evidence"] == []


def test_failing_classifier_is_counted_and_recall_goes_to_source() -> None:
    service, _ = _service()

    def broken(query: str) -> dict[str, str]:
        raise RuntimeError("llm down")

    service.classifier = broken
    answer = service.recall(RecallRequest(user_id="u", query="problems last week"))
    assert answer["classification"] == "ambiguous" and service.errors["classifier"] == 1


class ChunkedStores(FakeStores):
    """FakeStores with a chunk index (each memory's event as one chunk); counts range reads."""

    def __init__(self, memories: list[Observation], events: dict[str, Event]) -> None:
        super().__init__(memories, events)
        self.range_reads = 0

    def search_chunks(self, flt: SearchFilter, k: int, dense: Sequence[float] | None = None,
                      sparse: SparseVector | None = None) -> list[Hit]:
        ids = flt.memory_ids or tuple(self.memories)
        return [Hit(f"c-{mid}", 0.7, {"text": ev.content, "memory_id": mid,
                                      "event_id": ev.event_id, "event_index": 0,
                                      "char_start": 0})
                for mid in ids for ev in [self.events[self.memories[mid].source_range.thread_id]]]

    def get_range(self, user_id: str, thread: str, start: int, end: int) -> list[Event]:
        self.range_reads += 1
        return super().get_range(user_id, thread, start, end)


def test_a_question_by_meaning_is_answered_by_meaning_with_its_ranges_read() -> None:
    # not a precise lookup: lines by meaning answer it; the followed ranges are read too,
    # to know whether they hold tool events, whose lines the word-exact cut adds among the
    # candidates (session 21: before, the raw range was never read for such a question,
    # and a terraform plan line holding every word of the question lost to prose); these
    # ranges are messages alone, so meaning alone answers; a precise one cuts by words
    events = {t: Event(f"{t}-0", "u", t, "2024-05-01T00:00:00Z", "assistant", "message",
                       f"we moved the database to a bigger host ({t})\nunrelated", index=0)
              for t in ("a", "b")}
    stores = ChunkedStores([_memory("m1", "a", "2024-05-01T00:00:00Z", "database move", ()),
                            _memory("m2", "b", "2024-05-02T00:00:00Z", "database move", ())],
                           events)
    fake: Any = stores
    service = RecallService(fake, fake, fake, HashEmbedder(), ScoreWeights(),
                            lambda: datetime(2026, 1, 1, tzinfo=UTC))
    loose = service.recall(RecallRequest(user_id="u", query="tell me about that migration",
                                         mode="source"))
    assert loose["level"] == 1 and "semantic" in loose["evidence"][0]["reason"]
    assert "bigger host" in loose["evidence"][0]["extracted_text"]
    assert stores.range_reads > 0
    stores.range_reads = 0
    service.recall(RecallRequest(user_id="u", query="where is DB_HOST set", mode="source"))
    assert stores.range_reads > 0
