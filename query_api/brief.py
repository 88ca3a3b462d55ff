"""The brief view of a RecallResponse: compact text an agent can afford to read.

One place formats it for both the MCP ``search_memory`` tool (its default reply) and
``POST /v1/recall`` with ``"view": "brief"``:

* a header line (classification, level, how many memories and evidence ranges, the
  answer's relevance — or that nothing strong matches, or that relevance is not
  calibrated for the embedder the service runs);
* one line per memory: rank, score, status/tier, ``thread#start-end`` and the summary
  cut to :data:`SUMMARY_CHARS` characters;
* the verbatim evidence lines, grouped under the event they were cut from (event id and
  index), never rewritten;
* a last line with the reply's own token count and its limit (``[N tokens of L]``, or
  ``[≤N tokens of L]`` when the counter lets no number count itself exactly).

The whole text stays within ``max_tokens + BRIEF_OVERHEAD`` tokens as counted by the
given counter (the embedder's): lines that do not fit are left out from the end, and the
text says how many.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SUMMARY_CHARS = 200
BRIEF_OVERHEAD = 150  # tokens allowed above max_tokens for headers, memory lines, footer


def brief_view(response: dict[str, Any], max_tokens: int,
               count: Callable[[str], int]) -> dict[str, Any]:
    """``{"view": "brief", "text", "tokens", "token_limit", ...}`` for a RecallResponse."""
    limit = max_tokens + BRIEF_OVERHEAD
    text, tokens = brief_text(response, limit, count)
    return {"view": "brief", "query": response.get("query"),
            "classification": response.get("classification"), "level": response.get("level"),
            "text": text, "tokens": tokens, "token_limit": limit}


def brief_text(response: dict[str, Any], limit: int,
               count: Callable[[str], int]) -> tuple[str, int]:
    """The brief text and its token count (≤ ``limit``; the count is its last line)."""
    memories = response.get("memories") or []
    evidence = response.get("evidence") or []
    head = (f"{response.get('classification', '?')} (level {response.get('level', 0)}): "
            f"{len(memories)} memories, {len(evidence)} evidence ranges")
    if response.get("nothing_matches"):  # say it first: the memories below are weak
        head += f"; nothing strong matches (relevance {response.get('relevance', 0.0):.2f})"
    elif response.get("relevance") is not None:
        head += f"; relevance {response['relevance']:.2f}"
    elif response.get("relevance_calibrated") is False:  # another embedder: no judgement
        head += "; relevance not calibrated for this embedder"
    listed = [_memory_line(i, m) for i, m in enumerate(memories, 1)]
    ranks = {m.get("id"): i for i, m in enumerate(memories, 1)}
    quoted: list[str] = []
    if evidence:
        quoted.append("evidence (verbatim; quote it, never retype):")
        for item in evidence:
            quoted += _evidence_lines(item, ranks)
    return _fit(head, listed, quoted, limit, count)


def _memory_line(rank: int, memory: dict[str, Any]) -> str:
    summary = " ".join(str(memory.get("summary", "")).split())
    if len(summary) > SUMMARY_CHARS:
        summary = summary[: SUMMARY_CHARS - 1] + "…"
    rel = f" rel {float(memory['relevance']):.2f}" if "relevance" in memory else ""
    return (f"{rank}. [{float(memory.get('score') or 0.0):.2f}{rel} {memory.get('status')}/"
            f"{memory.get('tier')}] {_range(memory.get('source_range') or {})} {summary}")


def _range(rng: dict[str, Any]) -> str:
    return f"{rng.get('thread_id')}#{rng.get('start_index')}-{rng.get('end_index')}"


def _evidence_lines(item: dict[str, Any], ranks: dict[Any, int]) -> list[str]:
    rank = ranks.get(item.get("memory_id"))
    where = (f"{item.get('source_thread_id')}#{item.get('source_start_index')}-"
             f"{item.get('source_end_index')}")
    out = [f"— {where}" + (f" (memory {rank})" if rank else "") + ":"]
    lines = item.get("lines")
    if not lines:  # an older server: no per-line events, name them once
        ids = ", ".join(item.get("matched_event_ids") or [])
        return out + [f"  events {ids}:"] + [f"    {ln}" for ln in
                                              str(item.get("extracted_text", "")).splitlines()]
    current = None
    for line in lines:
        if line.get("event_id") != current:
            current = line.get("event_id")
            out.append(f"  event {current} (#{line.get('event_index')}):")
        out.append(f"    {line.get('text', '')}")
    return out


def _fit(head: str, listed: list[str], quoted: list[str], limit: int,
         count: Callable[[str], int]) -> tuple[str, int]:
    """Fit ``limit``: first drop memory lines after the best one, then evidence lines
    from the end (the evidence is the part an agent cannot get elsewhere)."""
    memories, evidence = list(listed), list(quoted)
    while True:
        left_out = len(listed) - len(memories) + len(quoted) - len(evidence)
        lines = [head, *memories, *evidence]
        if left_out:
            lines.append(f"… {left_out} more lines left out (token limit)")
        text = "\n".join(lines)
        footer, tokens = _footer(text, limit, count)
        if tokens <= limit or not (memories or evidence):
            return f"{text}\n{footer}", tokens
        if len(memories) > 1:
            memories.pop()
        elif evidence:
            evidence.pop()
        else:
            memories.pop()


def _footer(text: str, limit: int, count: Callable[[str], int]) -> tuple[str, int]:
    """The last line, naming the token count of the whole reply, footer included.

    The count's own digits can change the count: a value that counts itself is
    ``[N tokens of L]``; when the counter allows none, ``[≤N tokens of L]`` with the
    smallest N that bounds the reply (never an undercount).
    """
    first = count(f"{text}\n[{count(text)} tokens of {limit}]")
    for n in range(first - 2, first + 3):
        if count(f"{text}\n[{n} tokens of {limit}]") == n:
            return f"[{n} tokens of {limit}]", n
    for n in range(first - 2, first + 64):
        if count(f"{text}\n[≤{n} tokens of {limit}]") <= n:
            return f"[≤{n} tokens of {limit}]", n
    n = 2 * count(text) + 64  # a counter this erratic still gets a generous bound
    return f"[≤{n} tokens of {limit}]", n
