"""Supersession, conflicts, corroboration and dedupe: pure decisions over keyed facts.

A newer observation that gives a fact key (``env:DB_PORT``, ``file:src/a.ts#EMAIL_RE``)
a different value than an older memory of the same user and project (:func:`of_project`)
supersedes that fact. Facts are ordered by the ``ts`` of the event that states them (not
by arrival), so a late-arriving older range is itself the superseded one. Two values of
one key with the same ``ts`` cannot be ordered: both memories become ``conflicted``.

Design (fact-level supersession): an older memory whose *every* fact is superseded becomes
``superseded``; one that still holds other valid facts stays ``active`` (its other facts
must stay recallable) and lists the superseded ones in ``metadata.superseded_facts``.
An explicit reversal ("let's not do X", "やめよう", "revert") in the newer range supersedes
the older memories sharing a fact key with it, whatever the values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from breadcrumb.processors.lexical import lexical_terms

SUPERSEDED = "superseded"
#: facts of one session's settings (``session:<thread>#model``: ``processors.facts``): what
#: the session ran with at a moment, as history. A later value (a ``/model`` switch, a
#: ``cd``) does not make the lines that named the earlier one wrong — a working
#: directory stands in every path of its session — so they never supersede, conflict,
#: reverse or decide whether a memory is wholly superseded.
SESSION_KEY = "session:"
CONFLICTED = "conflicted"
DUPLICATE = "duplicate"

_REVERSAL = re.compile(
    r"(?i)\blet'?s\s+not\b|\bdon'?t\s+(?:use|do)\b|\bstop\s+using\b|\brevert(?:ed|ing)?\b"
    r"|\broll(?:ed)?\s*back\b|\bundo\b|\bgo\s+back\s+to\b"
    r"|やめよう|やめましょう|やめて|元に戻|取り消|リバート|戻しましょう|戻そう"
)
_PASSED = re.compile(r"(?i)\b(\d+\s+passed|tests?\s+pass(?:ed)?|all\s+passed|PASS)\b|成功")
_FAILED = re.compile(r"(?i)\b(\d+\s+failed|FAIL(?:ED)?)\b|失敗")
_CONFIRM = re.compile(
    r"(?i)^\s*(?:ok|okay|yes|yep|confirmed|lgtm|looks good|that works|perfect|great)\b"
    r"|\b(?:let'?s go with|confirmed)\b|それで(?:お願いします|いい|OK)"
    r"|了解|確認しました|問題ありません"
)


@dataclass(frozen=True, slots=True)
class FactRow:
    """One fact held by one memory (a row of the ``memory_facts`` lookup)."""

    memory_id: str
    key: str
    value: str
    ts: str  # ts of the event stating the value (ISO 8601, comparable as text per tenant)


@dataclass(frozen=True, slots=True)
class Verdict:
    """``older`` loses ``key`` to ``newer`` (kind ``superseded``), or the two conflict."""

    kind: str  # superseded | conflicted
    older: str
    newer: str
    key: str
    old_value: str
    new_value: str


def compare_facts(new: Sequence[FactRow], existing: Sequence[FactRow]) -> list[Verdict]:
    """Verdicts between the new memory's facts and other memories' facts of the same keys.

    ``existing`` rows of the new memory itself are ignored; equal values never conflict.
    """
    mine = {f.memory_id for f in new}
    by_key: dict[str, list[FactRow]] = {}
    for row in existing:
        if row.memory_id not in mine:
            by_key.setdefault(row.key, []).append(row)
    out: list[Verdict] = []
    for fact in (f for f in new if supersedable(f.key)):
        for other in sorted(by_key.get(fact.key, ()), key=lambda r: (r.ts, r.memory_id)):
            verdict = _order(fact, other)
            if verdict is not None:
                out.append(verdict)
    return out


def of_project(existing: Sequence[FactRow], memory_id: str, project_id: str | None,
               projects: Mapping[str, str | None]) -> list[FactRow]:
    """The facts of ``existing`` that memory ``memory_id`` of ``project_id`` can supersede,
    conflict with or reverse: its own and those of memories of the same project (no
    project: of no project). ``projects``: memory id -> its project (a memory not in it is
    not stored any more). A fact key names a setting of one project: one repository's
    ``DATABASE_URL`` is not replaced by another's, nor by a session that names no project
    (real sessions: an aider session's ``DATABASE_URL`` was marked superseded by a Codex
    session of another project, and its line dropped from the evidence)."""
    return [f for f in existing if f.memory_id == memory_id
            or (f.memory_id in projects and projects[f.memory_id] == project_id)]


def _order(a: FactRow, b: FactRow) -> Verdict | None:
    if a.value == b.value:
        return None
    if a.ts == b.ts:
        older, newer = sorted((a, b), key=lambda r: r.memory_id)
        return Verdict(CONFLICTED, older.memory_id, newer.memory_id, a.key, older.value,
                       newer.value)
    older, newer = (b, a) if b.ts < a.ts else (a, b)
    return Verdict(SUPERSEDED, older.memory_id, newer.memory_id, a.key, older.value, newer.value)


def reversal_verdicts(new_memory: str, new_ts: str, new_keys: Iterable[str],
                      existing: Sequence[FactRow]) -> list[Verdict]:
    """An explicit reversal in the newer range supersedes older holders of its keys."""
    keys = {k for k in new_keys if supersedable(k)}
    return [
        Verdict(SUPERSEDED, r.memory_id, new_memory, r.key, r.value, "(reverted)")
        for r in existing
        if r.key in keys and r.memory_id != new_memory and r.ts < new_ts
    ]


def supersedable(key: str) -> bool:
    """Whether a later value of ``key`` supersedes an earlier one (not a session's
    settings: :data:`SESSION_KEY`)."""
    return not key.startswith(SESSION_KEY)


def is_reversal(texts: Iterable[str]) -> bool:
    """True when any user/assistant message states an explicit reversal."""
    return any(_REVERSAL.search(t) for t in texts)


def is_verification(kind: str, content: str, exit_code: object = None) -> bool:
    """A passing test result, or a user message confirming what was done."""
    if kind == "test_result":
        if exit_code is not None:
            return exit_code == 0
        return bool(_PASSED.search(content)) and not _FAILED.search(content)
    return kind == "message" and bool(_CONFIRM.search(content))


def memory_outcome(held_keys: Iterable[str], lost_keys: Iterable[str]) -> str:
    """``superseded`` when every held fact key is lost, else ``partial`` (stays active);
    a session's settings (:data:`SESSION_KEY`) are held as history and do not count."""
    held, lost = {k for k in held_keys if supersedable(k)}, set(lost_keys)
    return SUPERSEDED if held and held <= lost else "partial"


@lru_cache(maxsize=4096)
def summary_terms(summary: str) -> frozenset[str]:
    """The distinct lexical terms of a summary (cached: a duplicate check compares one
    summary with many, and the same memories again for each replica)."""
    return frozenset(lexical_terms(summary))


def near_duplicate(summary_a: str, summary_b: str, facts_a: Iterable[tuple[str, str]],
                   facts_b: Iterable[tuple[str, str]], threshold: float = 0.9) -> bool:
    """Same non-empty fact set (a session's settings aside) and summary term Jaccard >=
    ``threshold``."""
    fa = {f for f in facts_a if supersedable(f[0])}
    fb = {f for f in facts_b if supersedable(f[0])}
    if not fa or fa != fb:
        return False
    ta, tb = summary_terms(summary_a), summary_terms(summary_b)
    if not ta or not tb:
        return ta == tb
    return len(ta & tb) / len(ta | tb) >= threshold
