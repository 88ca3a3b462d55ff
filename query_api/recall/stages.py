"""The values recall's stages hand each other (see :mod:`query_api.recall.pipeline`).

``analyze`` makes a :class:`~query_api.recall.question.Query`; ``retrieve`` a
:class:`Retrieved` (its :class:`Candidate` memories); ``decide`` a :class:`Decision`;
``recall`` a :class:`Recalled`; ``extract`` an :class:`Extracted`; ``respond`` the
RecallResponse with its :class:`StageTimings`. Each value carries what the next stages
need, so no stage searches or reads again what an earlier one already has. Values only:
this module imports no stage, and every stage may import it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from breadcrumb.query_api.models import RecallRequest
from breadcrumb.query_api.recall.passages import Found, Passage
from breadcrumb.query_api.recall.question import Query
from breadcrumb.query_api.recall.raw_reads import RangeReader
from breadcrumb.stores.ports import Hit
from breadcrumb.topics.records import Event, Observation

#: the stages a RecallResponse's ``timings_ms`` names, in order (``total`` last)
STAGES = ("analyze", "retrieve", "decide", "recall", "extract", "respond")


@dataclass(frozen=True, slots=True)
class Candidate:
    """A retrieved memory with the parts of its score."""

    memory: Observation
    score: float
    parts: dict[str, float]


@dataclass(frozen=True, slots=True)
class Decision:
    """The classification and the rule that produced it (shown to people)."""

    classification: str
    reason: str


@dataclass(frozen=True, slots=True)
class Retrieved:
    """Retrieve's value: candidates best first, and the passages the direct passage
    search found (handed on, so Extract never searches them again)."""

    request: RecallRequest  # include_superseded is set when the question asks for history
    query: Query
    ranked: list[Candidate]
    found: dict[str, Found]
    as_of: datetime | None = None  # recall in time: events said by then only
    #: how many of the ``k`` best the answer lists, and the evidence's token budget, once
    #: the budget is fitted (:func:`.budget.fitted`); None before: all ``k``
    listed: int | None = None
    evidence_tokens: int | None = None

    @property
    def top(self) -> list[Candidate]:
        """The best candidates the response lists (``k``, fewer once fitted)."""
        return self.ranked[: self.request.k if self.listed is None else self.listed]

    @property
    def evidence_budget(self) -> int:
        """The evidence's token budget (``max_tokens`` until fitted)."""
        return self.request.max_tokens if self.evidence_tokens is None else self.evidence_tokens


@dataclass(frozen=True, slots=True)
class OpenWindow:
    """The not yet observed events of one thread: indices ``start..end``."""

    user_id: str
    thread_id: str
    project_id: str | None
    start: int
    end: int
    last_ts: str


@dataclass(frozen=True, slots=True)
class Recalled:
    """Recall's value: the followed ranges (computed once) and what was read of them.

    ``follow``: whether memory evidence is sought (not a summary answer, some memory
    found). ``ranges``: per hop, its dense then its lexical chunk search; ``found``: the
    direct passage search's best passages of other memories; ``cut_passages``:
    each hop's top chunks for the word-exact cut; ``windows``: the open windows read
    (with their events) when the fresh tail is searched, else None."""

    retrieved: Retrieved
    decision: Decision
    follow: bool
    hops: list[Candidate] = field(default_factory=list)
    ranges: list[list[Hit]] = field(default_factory=list)
    cut_passages: dict[str, list[Passage]] = field(default_factory=dict)
    events: RangeReader | None = None
    windows: list[tuple[OpenWindow, list[Event]]] | None = None
    #: the direct passage search's best passages outside the followed ranges, per memory
    #: (best first): the word-exact cut reads them too (level 1)
    found: list[tuple[Candidate, list[Passage]]] = field(default_factory=list)
    #: a "how many" question whose count a ranked memory's summary quotes: the lines of
    #: its range holding the quote are in ``found``; the word-exact cut answers it
    quoted: bool = False

    @property
    def read(self) -> dict[str, Observation]:
        """The memories this recall has read (the ranked candidates)."""
        return {c.memory.id: c.memory for c in self.retrieved.ranked}


@dataclass(frozen=True, slots=True)
class Relevance:
    """How strongly what is held answers the question: the probability that it is held,
    the threshold below which nothing strong matches, each candidate memory's own."""

    question: float
    threshold: float
    memories: dict[str, float]

    @property
    def nothing_matches(self) -> bool:
        """Whether nothing strong matches the question."""
        return self.question < self.threshold


@dataclass(frozen=True, slots=True)
class Extracted:
    """Extract's value: the evidence records (contract RecalledEvidence) and the level."""

    evidence: list[dict[str, Any]]
    level: int
    #: how strongly what is held answers the question (the relevance model; None without
    #: one): a RecallResponse's ``relevance`` and ``nothing_matches``
    relevance: Relevance | None = None
    #: whether the relevance model serves this embedder (None: the service has no model):
    #: a RecallResponse's ``relevance_calibrated``
    calibrated: bool | None = None


class StageTimings:
    """Wall time per stage, in milliseconds (a RecallResponse's ``timings_ms``)."""

    __slots__ = ("started", "_last", "ms")

    def __init__(self) -> None:
        self.started = self._last = time.perf_counter()
        self.ms: dict[str, float] = {}

    def done(self, stage: str, moved: float = 0.0, to: str = "") -> None:
        """Close ``stage`` (since the previous one); ``moved`` seconds of it belong to
        the earlier stage ``to`` (the ranges Extract had Recall read)."""
        now = time.perf_counter()
        self.ms[stage] = (now - self._last - moved) * 1000
        if moved:
            self.ms[to] += moved * 1000
        self._last = now

    def report(self) -> dict[str, float]:
        """``{stage: ms, ..., "total": ms}``, rounded to microseconds."""
        total = (time.perf_counter() - self.started) * 1000
        return {**{s: round(v, 3) for s, v in self.ms.items()}, "total": round(total, 3)}
