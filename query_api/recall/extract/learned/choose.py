"""Level 3 over the learned ranking: an LLM chooses among the best-ranked lines.

Where a model is configured (``LLM_*``), the learned ranker's best lines (each text once,
:data:`SHOWN` of them and :data:`MAX_CHARS` at most, best first) are shown to it with the
question; it answers with the lines that answer (``{"quotes": [...]}``, the quoter port of
:mod:`..cut`). A quote counts only when it is one of the lines shown, verbatim (the whole
line, or a part of exactly one line of at least :data:`MIN_PART` characters): the evidence
is always the stored line, never the model's string. A failing model is counted
(``errors["quoter"]``) and the ranking stands; a quote matching no line shown is counted
(``errors["quotes_dropped"]``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from breadcrumb.query_api.recall.extract.cut import Quoter

log = logging.getLogger(__name__)

#: lines shown to the model: the ranking's best, each text once
SHOWN = 40
#: a quote shorter than the whole line counts when it is at least this long and in one line
MIN_PART = 12
#: the lines shown stop before their text passes this many characters (the word-exact
#: cut's level 3 sends the same at most)
MAX_CHARS = 20_000


def chosen(question: str, texts: Sequence[str], order: Sequence[int], chooser: Quoter,
           errors: Counter[str]) -> list[int]:
    """Positions in ``texts`` the model chose among the first :data:`SHOWN` distinct ones
    of ``order``, in the model's order (empty: the model failed or chose none shown)."""
    shown: list[int] = []
    seen: set[str] = set()
    size = 0
    for i in order:
        text = texts[i].strip()
        if text and text not in seen:
            size += len(texts[i]) + 1
            if size > MAX_CHARS and shown:
                break
            seen.add(text)
            shown.append(i)
            if len(shown) == SHOWN:
                break
    if not shown:
        return []
    try:
        quotes = list(chooser(question, "\n".join(texts[i] for i in shown)))
    except Exception as exc:  # the LLM port failed: count it, the ranking stands
        errors["quoter"] += 1
        log.warning("LLM line choice failed (%s); keeping the learned ranking", exc)
        return []
    picked: list[int] = []
    for quote in (str(q).strip() for q in quotes):
        if not quote:
            continue
        hit = _line_of(quote, texts, shown)
        if hit is None:
            errors["quotes_dropped"] += 1
        elif hit not in picked:
            picked.append(hit)
    return picked


def _line_of(quote: str, texts: Sequence[str], shown: Sequence[int]) -> int | None:
    """The shown line the quote is (whole), else the one line holding it (a part)."""
    for i in shown:
        if texts[i].strip() == quote:
            return i
    if len(quote) < MIN_PART:
        return None
    holding = [i for i in shown if quote in texts[i]]
    return holding[0] if len(holding) == 1 else None
