"""Lines that carry a value a newer memory replaced (:func:`drop_superseded`): history, not
answers, unless history is asked for; and where a value stands whole in a line
(:func:`holds_value`)."""

from __future__ import annotations

import re
from collections.abc import Callable

from breadcrumb.query_api.recall.lines.shapes import command_line
from breadcrumb.query_api.recall.passages import Extract
from breadcrumb.query_api.recall.question import QueryIntent
from breadcrumb.topics.records import Observation

_FAILURE_LINE = re.compile(r"\b(Error|ERROR|Exception|FAILED|Traceback)\b|エラー|失敗")


def drop_superseded(
    cut: Extract, memory: Observation, include: bool, count: Callable[[str], int],
    intent: QueryIntent | None = None,
) -> tuple[Extract, list[str]]:
    """Lines carrying a fact value that a newer memory replaced are history, not answers.

    Without ``include_superseded`` they are dropped (the memory's other, still-valid facts
    stay); with it they are kept and the values are named in ``superseded_values``. A
    failure line (``Error: connect ECONNREFUSED 127.0.0.1:5432``) is what happened, not a
    value claimed now: it stays. So does a command line asked for ("which command starts
    the web explorer", not "… now"): the command that was run, its replaced values named
    in ``superseded_values`` (u02: ``LEASH_RUNNER_URL=http://localhost:8787 pnpm …``, the
    port moved to 8788 later). A value counts where it stands whole (:func:`holds_value`):
    a stale ``80`` leaves ``8080`` alone.
    """
    facts = memory.metadata.get("superseded_facts") or {}
    stale = sorted({str(f.get("value")) for f in facts.values()
                    if isinstance(f, dict) and f.get("value")})
    if not stale:
        return cut, []
    if include:
        return cut, [v for v in stale if holds_value(cut.text, v)]
    ran = intent if intent is not None and intent.temporal != "newest" else None
    commands = [ln for ln in cut.lines if ran is not None and command_line(ln.text, ran)]
    kept = tuple(ln for ln in cut.lines if _FAILURE_LINE.search(ln.text) or ln in commands
                 or not any(holds_value(ln.text, v) for v in stale))
    named = [v for v in stale if any(holds_value(ln.text, v) for ln in commands)]
    return Extract.joined(kept, count, cut.best_score), named  # costed as its joined text


def holds_value(text: str, value: str) -> bool:
    """Whether ``value`` stands whole in ``text``: not inside a longer number, word or
    version (``80`` is not in ``8080``, ``port 180`` or ``1.80``; ``9`` not in ``cache-9``).
    An edge of the value that is not an ASCII letter or digit (a quote, a slash, a CJK
    character: such text has no spaces between words) bounds itself."""
    if not value:
        return False
    head = r"(?<![A-Za-z0-9_.-])" if _ascii_word(value[0]) else ""
    tail = r"(?![A-Za-z0-9_]|[.-][A-Za-z0-9_])" if _ascii_word(value[-1]) else ""
    return re.search(head + re.escape(value) + tail, text) is not None


def _ascii_word(char: str) -> bool:  # CJK text has no spaces between words: no bounds
    return char.isascii() and (char.isalnum() or char == "_")
