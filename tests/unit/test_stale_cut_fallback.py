"""When every exact line of the followed range holds a superseded value, the answer is
those lines marked as history, not lines chosen by meaning that miss the asked literal."""

from __future__ import annotations

from collections import Counter

from breadcrumb.processors.lexical import query_terms
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.query_api.recall.extract import Extractor
from breadcrumb.query_api.recall.passages import Found, Passage
from breadcrumb.query_api.recall.question import Query, analyze_query
from breadcrumb.query_api.recall.raw_reads import RangeReader
from breadcrumb.query_api.recall.stages import Candidate, Decision, Recalled, Retrieved
from breadcrumb.topics.records import Event, Observation, SourceRange

QUESTION = "what default value did we give INVOICE_POOL_SIZE in resolve_invoice?"
VALUE = "redis://cache-6:44823/0"
LINES = (f"resolve_invoice in src/billing/invoice.py breaks under load. Set INVOICE_POOL_SIZE="
         f"{VALUE} and make `cargo test invoice` pass.",
         "I'll read src/billing/invoice.py and run the tests first.",
         f'+    invoice = os.environ.get("INVOICE_POOL_SIZE", "{VALUE}")')


def _count(text: str) -> int:
    return len(text.split())


def _memory(stale: dict[str, str]) -> Observation:
    facts = {key: {"value": value, "superseded_by": "newer"} for key, value in stale.items()}
    return Observation(id="m1", user_id="u", project_id=None, summary="invoice pool size",
                       source_range=SourceRange("t", 0, len(LINES) - 1), tags=(),
                       query_hints=(), retrieve_when="", importance=0.5,
                       created_at="2026-12-01T00:00:00Z",
                       metadata={"superseded_facts": facts})


class _Raw:
    def __init__(self) -> None:
        self.events = [Event(f"e{i}", "u", "t", "2026-12-01T00:00:00Z", "user", "message",
                             text, index=i) for i, text in enumerate(LINES)]

    def get_range(self, user_id: str, thread_id: str, start: int, end: int) -> list[Event]:
        return self.events[start:end + 1]

    def get_event(self, user_id: str, event_id: str) -> Event | None:
        return next((e for e in self.events if e.event_id == event_id), None)


class _Memories:
    def __init__(self, memory: Observation) -> None:
        self.memory = memory

    def get_memories(self, user_id: str, ids: list[str]) -> list[Observation]:
        return [self.memory] if self.memory.id in ids else []


def _evidence(stale: dict[str, str]) -> list[dict[str, object]]:
    memory, raw = _memory(stale), _Raw()
    query = Query(QUESTION, analyze_query(QUESTION), query_terms(QUESTION), [0.0])
    cand = Candidate(memory, 1.0, {})
    # what the passage search found by meaning: a line of the range without the value
    found = {"e1": Found(Passage("e1", 1, 0, LINES[1]), "m1", 0.9)}
    retrieved = Retrieved(RecallRequest(user_id="u", query=QUESTION), query, [cand], found)
    recalled = Recalled(retrieved, Decision("needs_source", "names a literal"), True,
                        hops=[cand], ranges=[[], []], cut_passages={"m1": []},
                        events=RangeReader(raw, "u"))  # type: ignore[arg-type]
    extractor = Extractor(_Memories(memory), raw, _count, _count, None,  # type: ignore[arg-type]
                          Counter())
    return extractor(recalled).evidence


def test_a_current_value_is_cut_exactly() -> None:
    texts = "\n".join(str(e["extracted_text"]) for e in _evidence({}))
    assert f"INVOICE_POOL_SIZE={VALUE}" in texts


def test_all_lines_stale_gives_the_exact_lines_marked_not_lines_by_meaning() -> None:
    """Before: the stale cut ended empty and the meaning path answered with
    "I'll read src/billing/invoice.py ...", which holds neither the literal nor a value."""
    evidence = _evidence({"env:INVOICE_POOL_SIZE": VALUE})
    assert evidence, "no evidence at all"
    texts = "\n".join(str(e["extracted_text"]) for e in evidence)
    assert f"INVOICE_POOL_SIZE={VALUE}" in texts, texts
    assert all(e.get("superseded_values") == [VALUE] for e in evidence), evidence
