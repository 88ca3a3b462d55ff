"""The LLM observer's pure half: prompt, output schema, validation and merge.

No I/O here (the chat call lives in ``stores.llm.chat``). The model sees the range's
events — role, kind, tool, attrs and content, with large tool outputs trimmed to
their head, tail and error lines — plus the exact values the deterministic observer
already found, and must answer one JSON object::

    {"summary": str, "tags": [str], "query_hints": [str], "retrieve_when": str,
     "importance": 0..1, "kind": str (optional)}

:func:`merge_observation` builds the final breadcrumb from the deterministic one:
ids, ``source_range``, facts, metadata, ``created_at``, status and tier always come
from the deterministic observation (replay ids never depend on a model), and every
deterministic hint is kept in its order. A model hint is added when it occurs
verbatim in the range; otherwise it is kept only when it is a plain phrase (no
exact-value shape: path, identifier, regex, port, env, SQL, ...), because an
exact-looking value the source does not contain would be presented as exact and be
wrong. Dropped hints are listed in ``metadata["llm_dropped_hints"]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from jsonschema import Draft202012Validator

from breadcrumb.processors.hints import ERROR_WORDS, extract_typed_values
from breadcrumb.topics.records import ClosedRange, Event, Observation

SCHEMA_NAME = "breadcrumb_observation"

#: What the model must return (validated before anything is merged).
OBSERVATION_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["summary", "tags", "query_hints", "retrieve_when", "importance"],
    "properties": {
        "summary": {"type": "string", "minLength": 1, "maxLength": 2000},
        "tags": {"type": "array", "maxItems": 64,
                 "items": {"type": "string", "minLength": 1, "maxLength": 64}},
        "query_hints": {"type": "array", "maxItems": 200,
                        "items": {"type": "string", "minLength": 1, "maxLength": 400}},
        "retrieve_when": {"type": "string", "minLength": 1, "maxLength": 1000},
        "importance": {"type": "number", "minimum": 0, "maximum": 1},
        "kind": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,31}$"},
    },
}
_VALIDATOR = Draft202012Validator(OBSERVATION_SCHEMA)

SYSTEM_PROMPT = """You are the observer of an AI agent's memory. You read one source range \
(consecutive events of one agent thread) and write a breadcrumb: a short summary that \
points back to the verbatim source, plus search hints. Never rewrite exact values: \
identifiers, paths, regexes, ports, env vars, SQL, commands and error strings go into \
query_hints copied character for character from the events. Write the summary and \
retrieve_when in the language of the conversation.

Answer with ONE JSON object and nothing else:
{"summary": "1-3 sentences: the request, what was decided or done, the outcome",
 "tags": ["lowercase topic words"],
 "query_hints": ["exact values and key phrases someone would search for"],
 "retrieve_when": "When a question is about ... (the situations this memory answers)",
 "importance": 0.0-1.0 (decisions, fixed errors and config changes are high),
 "kind": "optional one-word category, e.g. decision, bugfix, config, research"}"""


@dataclass(frozen=True)
class PromptConfig:
    """Trimming limits: a large tool output keeps its head, tail and error lines."""

    max_lines: int = 60  # contents with more lines are trimmed
    head_lines: int = 20
    tail_lines: int = 15
    max_error_lines: int = 20
    max_line_chars: int = 400
    max_event_chars: int = 6000
    max_prompt_chars: int = 48_000
    max_known_values: int = 80
    max_tags: int = 40
    summary_chars: int = 600


class ObservationOutputError(ValueError):
    """The model's answer is not a valid observation (the message lists every problem)."""


# ---- prompt ------------------------------------------------------------------------------
def build_messages(
    events: Sequence[Event], closed: ClosedRange, known_values: Sequence[str],
    cfg: PromptConfig = PromptConfig(),
) -> list[dict[str, str]]:
    """Chat messages for one range: the system prompt and the rendered events."""
    rng = closed.source_range
    budget = max(cfg.max_prompt_chars // max(len(events), 1), 400)
    body = "\n\n".join(render_event(e, replace(cfg, max_event_chars=min(
        cfg.max_event_chars, budget))) for e in events)
    values = [v for v in known_values if len(v) <= cfg.max_line_chars][: cfg.max_known_values]
    user = (
        f"Thread {rng.thread_id}, events {rng.start_index}..{rng.end_index} "
        f"(cut: {closed.reason}).\n\n{body}\n\n"
        "Exact values already found (keep them; add any that are missing):\n"
        + json.dumps(values, ensure_ascii=False)
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def render_event(event: Event, cfg: PromptConfig = PromptConfig()) -> str:
    """``[index] role/kind tool=… attrs={…}`` then the (trimmed) content."""
    head = f"[{event.index}] {event.role}/{event.kind}"
    if event.tool:
        head += f" tool={event.tool}"
    if event.attrs:
        head += " attrs=" + _clip(json.dumps(event.attrs, ensure_ascii=False, sort_keys=True),
                                  cfg.max_line_chars)
    return f"{head}\n{trim_content(event.content, cfg)}"


def trim_content(text: str, cfg: PromptConfig = PromptConfig()) -> str:
    """``text`` itself when small; else head lines, error lines and tail lines.

    Omitted stretches are marked ``… [N lines omitted] …``; every kept line is cut at
    ``max_line_chars`` and the whole at ``max_event_chars``.
    """
    lines = text.splitlines()
    if len(lines) <= cfg.max_lines and len(text) <= cfg.max_event_chars:
        return text
    if len(lines) <= cfg.head_lines + cfg.tail_lines:
        keep = list(range(len(lines)))
    else:
        keep = _kept_lines(lines, cfg)
    out: list[str] = []
    previous = -1
    for i in keep:
        if i > previous + 1:
            out.append(f"… [{i - previous - 1} lines omitted] …")
        out.append(_clip(lines[i], cfg.max_line_chars))
        previous = i
    if previous < len(lines) - 1:
        out.append(f"… [{len(lines) - 1 - previous} lines omitted] …")
    return _clip("\n".join(out), cfg.max_event_chars)


def _kept_lines(lines: list[str], cfg: PromptConfig) -> list[int]:
    head = range(cfg.head_lines)
    tail = range(len(lines) - cfg.tail_lines, len(lines))
    errors = [i for i in range(cfg.head_lines, len(lines) - cfg.tail_lines)
              if any(w in lines[i].lower() for w in ERROR_WORDS)][: cfg.max_error_lines]
    return sorted({*head, *errors, *tail})


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


# ---- output ------------------------------------------------------------------------------
def validate_output(data: Any) -> dict[str, Any]:
    """``data`` when it matches :data:`OBSERVATION_SCHEMA`, else ObservationOutputError."""
    errors = sorted(_VALIDATOR.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        problems = "; ".join(
            f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
            for e in errors[:10]
        )
        raise ObservationOutputError(f"model output does not match {SCHEMA_NAME}: {problems}")
    result: dict[str, Any] = data
    return result


def merge_observation(
    base: Observation, output: dict[str, Any], events: Sequence[Event], model: str,
    cfg: PromptConfig = PromptConfig(),
) -> Observation:
    """The deterministic ``base`` with the model's summary, tags, hints and importance.

    ``output`` must already be valid (:func:`validate_output`). Identity, range,
    facts, timestamps, status and tier stay ``base``'s; base hints are all kept.
    """
    added, dropped = _model_hints(base.query_hints, output["query_hints"], events)
    metadata = {**base.metadata, "observer": f"llm/{model}"}
    if dropped:
        metadata["llm_dropped_hints"] = dropped[:20]
    tags = _dedupe([*base.tags, *(_tag(t) for t in output["tags"])])[: cfg.max_tags]
    return replace(
        base,
        summary=_clip(" ".join(output["summary"].split()), cfg.summary_chars),
        tags=tuple(tags),
        query_hints=tuple([*base.query_hints, *added]),
        retrieve_when=_clip(" ".join(output["retrieve_when"].split()), cfg.summary_chars),
        importance=round(float(output["importance"]), 3),
        kind=str(output.get("kind") or base.kind),
        metadata=metadata,
    )


def _model_hints(
    base: Sequence[str], proposed: Iterable[str], events: Sequence[Event]
) -> tuple[list[str], list[str]]:
    """(hints to add, hints dropped): verbatim in the range, or plain phrases only."""
    source = _range_text(events)
    known = set(base)
    added: list[str] = []
    dropped: list[str] = []
    for raw in proposed:
        hint = raw.strip()
        if not hint or hint in known:
            continue
        known.add(hint)
        if hint in source or not extract_typed_values(hint):
            added.append(hint)
        else:
            dropped.append(hint)
    return added, dropped


def _range_text(events: Sequence[Event]) -> str:
    parts: list[str] = []
    for event in events:
        parts.append(event.content)
        parts.extend(str(v) for v in event.attrs.values() if isinstance(v, str | int | float))
        if event.tool:
            parts.append(event.tool)
    return "\n".join(parts)


def _tag(text: str) -> str:
    return "-".join(text.strip().lower().split())


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))
