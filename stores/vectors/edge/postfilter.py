"""Lexical searches on a filter most points pass: unfiltered first, filtered after (issue 14).

Qdrant Edge answers a sparse (lexical) query without a filter with exact top-k pruning
over the posting lists, but with a filter it checks the payload condition of every posting
of every query term. On a data dir where one tenant owns nearly every point, the tenant
filter (``user_id``, ``status``) passes nearly everything and only costs: at 1M chunks, a
query term in a fifth of them took 10.3 ms filtered and 0.4 ms unfiltered with the
payload fields to check (measured in session 10 on a shard of ``bench.recall``'s texts).

So a lexical search whose conditions are only ``user_id`` / ``status`` is first asked
unfiltered for ``OVERFETCH`` × k points, with the payload fields of those conditions, and
the hits are filtered here. The answer is **exact**: when at least k of them pass, no
point outside the unfiltered top ``OVERFETCH`` × k can score above them, so they are the
filtered top k (up to the order of equal scores, which Qdrant does not define either); when
the unfiltered query returns fewer points than it asked for, it returned every point with
a query term, and the ones passing are the whole filtered answer. Otherwise the filtered
query runs as before. A tenant whose points are too few for that (a shared data dir) has
its next ``RETRY_AFTER`` searches of that collection go straight to the filtered query.

Tenant isolation rests on :func:`passes`, the same conditions Qdrant would apply: a point
whose payload lacks a condition's field, or whose value is not the condition's, is dropped
before any hit leaves this module.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import qdrant_edge as qe

from breadcrumb.stores.vectors.qdrant_common import Condition

OVERFETCH = 2  # the unfiltered attempt asks for this many times k points
RETRY_AFTER = 32  # filtered searches of a (collection, user) after an attempt fell short
ELIGIBLE = frozenset({"user_id", "status"})  # conditions most points of a tenant pass


def passes(payload: dict[str, Any], conditions: Sequence[Condition]) -> bool:
    """True when ``payload`` meets every condition (a scalar field: equal, or one of a
    tuple's values), as Qdrant's ``MatchValue`` / ``MatchAny`` on keyword fields."""
    for cond in conditions:
        value = payload.get(cond.key)
        if not isinstance(value, str):
            return False
        if value not in cond.value if isinstance(cond.value, tuple) else value != cond.value:
            return False
    return True


@dataclass(frozen=True, slots=True)
class Attempt:
    """An unfiltered lexical request and what turns its points into the filtered answer."""

    request: qe.QueryRequest  # unfiltered, OVERFETCH × k, payload fields to check
    filtered: qe.QueryRequest  # the request as it would have run (the fallback)
    conditions: tuple[Condition, ...]
    k: int
    with_payload: bool  # the caller's: strip the checked fields when False
    key: tuple[str, str]  # (collection, user_id)


class PostFilter:
    """Plans lexical requests as :class:`Attempt` where that pays; thread-safe."""

    def __init__(self) -> None:
        self._skip: dict[tuple[str, str], int] = {}  # searches left to run filtered
        self._lock = threading.Lock()
        self.attempts = 0  # unfiltered attempts made
        self.fallbacks = 0  # of them, answered by the filtered request after all

    def plan(self, name: str, conditions: Sequence[Condition], k: int, query: Any,
             filtered: qe.QueryRequest, with_payload: bool) -> Attempt | None:
        """The attempt for a sparse ``query`` (None: run ``filtered`` as it is)."""
        if k <= 0 or any(c.key not in ELIGIBLE for c in conditions):
            return None
        key = (name, str(conditions[0].value))  # user_id always comes first
        with self._lock:
            left = self._skip.get(key, 0)
            if left:
                self._skip[key] = left - 1
                return None
            self.attempts += 1
        fields: bool | list[str] = True if with_payload else sorted({c.key for c in conditions})
        request = qe.QueryRequest(limit=OVERFETCH * k, query=query, filter=None,
                                  with_payload=fields)
        return Attempt(request, filtered, tuple(conditions), k, with_payload, key)

    def finish(self, attempt: Attempt, points: Sequence[Any]) -> list[Any] | None:
        """The filtered answer from the attempt's ``points`` (each ``.payload``), or None
        when only the filtered request can tell (then run ``attempt.filtered``)."""
        kept = [p for p in points if passes(p.payload or {}, attempt.conditions)]
        if len(kept) < attempt.k and len(points) >= attempt.request.limit:
            with self._lock:
                self.fallbacks += 1
                self._skip[attempt.key] = RETRY_AFTER
            return None
        return kept[:attempt.k]

    def run(self, requests: Sequence[qe.QueryRequest | Attempt],
            query_batch: Callable[[list[qe.QueryRequest]], list[Any]]
            ) -> list[tuple[list[Any], bool]]:
        """``requests`` answered through ``query_batch`` (one call; a second one for the
        attempts that fell short, with their filtered requests): each one's points and
        whether to keep their payload (False: the caller asked for ids and scores)."""
        results = query_batch([r.request if isinstance(r, Attempt) else r for r in requests])
        out: list[tuple[list[Any], bool]] = []
        again: list[tuple[int, Attempt]] = []
        for pos, (req, points) in enumerate(zip(requests, results, strict=True)):
            if not isinstance(req, Attempt):
                out.append((list(points), True))
                continue
            kept = self.finish(req, points)
            if kept is None:
                again.append((pos, req))
            out.append((kept or [], req.with_payload))
        if again:
            redone = query_batch([attempt.filtered for _pos, attempt in again])
            for (pos, _attempt), points in zip(again, redone, strict=True):
                out[pos] = (list(points), True)  # the filtered request's own payload choice
        return out
