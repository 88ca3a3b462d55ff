"""The deterministic observer: one closed source range in, one breadcrumb out.

Offline and pure: the same events and range always give the same observation. The
summary is a readable gist in the range's own language, each request with its own
conclusion, files touched, test outcome (:mod:`processors.summary`); the exact values
are never rewritten, they are copied verbatim into ``query_hints`` (all of them;
``max_hints`` caps only the natural-language phrases) and, keyed, into ``facts``. A range
of tool output alone (an oversized log) that is a test run is summarised by the run
itself (:mod:`processors.test_runs`): counts, the failing tests first among the hints,
and descriptors in the range's language.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from breadcrumb.processors.facts import extract_facts
from breadcrumb.processors.hints import extract_typed_values
from breadcrumb.processors.identifier_words import identifier_words
from breadcrumb.processors.ids import memory_id
from breadcrumb.processors.phrases import detect_language, extract_phrases
from breadcrumb.processors.summary import range_language, summarize, users_words
from breadcrumb.processors.test_runs import TestRun, read_test_run
from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.topics.records import ClosedRange, Event, Fact, Observation


@dataclass(frozen=True)
class ObserverConfig:
    """``max_hints`` caps the phrase hints (never exact values); ``summary_chars`` the summary."""

    max_hints: int = 64
    summary_chars: int = 400


TypedValues = list[tuple[str, str]]

_TEST_PATH = re.compile(r"(^|/)tests?/|(^|/)test_[^/]*$|_test\.\w+$|\.(test|spec)\.[jt]sx?$")
_DECISION = re.compile(
    r"(?i)\b(decid\w*|let'?s go with|we'?ll use|going with|agreed|settled on|chose|choose)\b"
    r"|決定|決め|採用|にします|にしましょう|で行き|方針"
)
_RESEARCH_TOOLS = frozenset(
    {"web_search", "arxiv", "browser", "web_fetch", "fetch", "paper_search"}
)
_TEST_COMMAND = re.compile(r"\b(pytest|jest|vitest|npm test|go test|cargo test|unittest|rspec)\b")
_RESEARCH_WORDS = re.compile(r"(?i)\bpapers?\b|\barxiv\b|論文|先行研究")
_LANG_BY_EXT = {
    "py": "python", "ts": "typescript", "tsx": "typescript", "js": "javascript",
    "jsx": "javascript", "go": "go", "rs": "rust", "rb": "ruby", "java": "java", "sql": "sql",
    "yml": "yaml", "yaml": "yaml", "sh": "shell", "toml": "toml", "json": "json",
}
#: Kinds of exact value that make the best examples in ``retrieve_when``.
_SALIENT_KINDS = (
    "env", "regex", "sql_table", "port", "image", "error", "cron", "arxiv_id", "endpoint",
    "path", "file", "identifier",
)
_PATH_KINDS = frozenset({"path", "file"})
_TALK = ("message", "note", "topic_change")
_MAX_LIST = 40


def observe(events: Sequence[Event], closed: ClosedRange, cfg: ObserverConfig) -> Observation:
    """Turn the events of ``closed`` into an Observation (deterministic, offline)."""
    if not events:
        raise ValueError(f"observe: no events for range {closed.source_range}")
    rng = closed.source_range
    lang = range_language(events)
    typed = _typed_values(events)
    ran_with = _settings_lines(events)
    run = _tool_test_run(events)
    phrases = _phrases(events, lang, run)[: max(cfg.max_hints, 0)]
    files = _files(events, typed)
    facts = extract_facts(events)
    research = _is_research(events, typed)
    tags = _tags(events, typed, files, research)
    metadata = _metadata(events, typed, files, facts, lang, closed.reason)
    if research:
        metadata["paper_ids"] = [v for k, v in typed if k == "arxiv_id"]
        metadata["concepts"] = phrases[:8]
    return Observation(
        id=memory_id(closed.user_id, rng.thread_id, rng.start_index, rng.end_index),
        user_id=closed.user_id,
        project_id=closed.project_id,
        summary=summarize(events, lang, files, typed, cfg.summary_chars, run),
        source_range=rng,
        tags=tuple(tags),
        query_hints=tuple(_dedupe((run.values() if run else []) + phrases[:_run_words(run, lang)]
                                  + ran_with + [v for _k, v in typed] + phrases)),
        retrieve_when=_retrieve_when(lang, phrases, typed, rng.thread_id, ran_with),
        importance=_importance(events, typed, tags),
        created_at=events[-1].ts,
        facts=tuple(facts),
        metadata=metadata,
    )


# ---- values -----------------------------------------------------------------------------
def _typed_values(events: Sequence[Event]) -> TypedValues:
    """All exact values of the range, by first occurrence, plus attrs paths and commands."""
    out: TypedValues = []
    for event in events:
        for key, kind in (("path", "path"), ("command", "command")):
            value = event.attrs.get(key)
            if isinstance(value, str) and value.strip():
                out.append((kind, value))
        content = event.content
        if event.kind == "tool_call" and "\n" not in content.strip() and 0 < len(content) <= 200:
            out.append(("command", content.strip()))
        out.extend(extract_typed_values(content))
    seen: dict[str, str] = {}
    for kind, value in out:
        seen.setdefault(value, kind)
    return [(kind, value) for value, kind in seen.items()]


def _settings_lines(events: Sequence[Event]) -> list[str]:
    """The lines of the range's settings notes (``attrs.session_settings``: the model,
    provider, agent version, working directory, branch the session ran with) that name a
    setting, verbatim (``model: claude-sonnet-4-5-20250929``, aider's ``Main model: …``):
    hints, so that "which model did this session use?" finds the range."""
    lines: list[str] = []
    for event in events:
        settings = event.attrs.get("session_settings")
        if event.kind != "note" or not isinstance(settings, dict):
            continue
        values = [v for v in settings.values() if isinstance(v, str) and v]
        lines += [ln.strip() for ln in event.content.splitlines()
                  if any(v in ln for v in values)]
    return _dedupe(lines)


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def _conversation(events: Sequence[Event]) -> list[Event]:
    talk = [e for e in events if e.kind in _TALK]
    return talk or list(events)


def _said(events: Sequence[Event]) -> list[str]:
    """The words people said in the range, which the phrase hints are drawn from: the
    user's turns (without what their harness adds around them: :func:`users_words`) and
    the assistant's. A note the system wrote — a harness's caveat or instructions
    ("Caveat: The messages below were generated by the user while running local
    commands …"), the environment, an importer's record, a tool's echo — is nobody's
    words: its phrases would be the harness's boilerplate in every session. Only a range
    where nobody talks draws on its other events (a long log's lines)."""
    talk = [e for e in events if e.kind in _TALK and e.role in ("user", "assistant")]
    if talk:
        return [users_words(e.content[:4000]) if e.role == "user" else e.content[:4000]
                for e in talk]
    spoken = [e for e in events if not (e.kind == "note" and e.role == "system")]
    return [e.content[:4000] for e in spoken or events]


def _phrases(events: Sequence[Event], lang: str, run: TestRun | None) -> list[str]:
    """Phrases of what was said (:func:`_said`) in the range's language first; a range
    that also holds another script (an English session with a Japanese request) gets
    that language's phrases after."""
    said = _said(events)
    text = "\n".join(said)
    words = run.descriptors([lang]) if run else []
    also = detect_language("\n".join(t[:2000] for t in said))
    more = extract_phrases(text, also) if also != lang else []
    return _dedupe(words + extract_phrases(text, lang) + more)


def _tool_test_run(events: Sequence[Event]) -> TestRun | None:
    """The test run of a range that holds tool output only (no conversation to summarise)."""
    if any(e.kind in ("message", "note", "topic_change") for e in events):
        return None
    return read_test_run(events)


def _run_words(run: TestRun | None, lang: str) -> int:
    return len(run.descriptors([lang])) if run else 0


def _files(events: Sequence[Event], typed: TypedValues) -> list[str]:
    paths = [str(e.attrs["path"]) for e in events if isinstance(e.attrs.get("path"), str)]
    commands = {e.content for e in events if e.kind == "tool_call"}
    for kind, value in typed:
        if kind in _PATH_KINDS and any(value in c for c in commands):
            paths.append(value)
    return _dedupe(paths)[:_MAX_LIST]


def _is_research(events: Sequence[Event], typed: TypedValues) -> bool:
    if any(k in ("arxiv", "arxiv_id") for k, _v in typed):
        return True
    return any(e.tool in _RESEARCH_TOOLS for e in events) or any(
        _RESEARCH_WORDS.search(e.content[:2000]) for e in _conversation(events)
    )


# ---- tags, metadata, importance ------------------------------------------------------
def _tags(
    events: Sequence[Event], typed: TypedValues, files: list[str], research: bool
) -> list[str]:
    kinds = {e.kind for e in events}
    value_kinds = {k for k, _v in typed}
    work = [
        ("coding", "file_edit" in kinds or bool(files)),
        ("test", "test_result" in kinds or any(_TEST_COMMAND.search(c) for c in _commands(events))),
        ("config", bool(value_kinds & {"env", "image", "port"})),
        ("decision", any(_DECISION.search(e.content[:4000]) for e in _conversation(events))),
        ("error", "error" in value_kinds or _failed_tests(events)),
        ("research", research),
        ("sql", "sql" in value_kinds),
        ("docker", "image" in value_kinds),
        ("cron", "cron" in value_kinds),
    ]
    tags = [name for name, present in work if present]
    exts = [f.rsplit(".", 1)[-1].lower() for f in files if "." in f.rsplit("/", 1)[-1]]
    tags += [_LANG_BY_EXT[x] for x in exts if x in _LANG_BY_EXT]
    tags += [_stem(f) for f in files]
    return _dedupe(tags)[:_MAX_LIST]


def _commands(events: Sequence[Event]) -> list[str]:
    attrs = [str(e.attrs["command"]) for e in events if "command" in e.attrs]
    return attrs + [e.content[:500] for e in events if e.kind == "tool_call"]


def _stem(path: str) -> str:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return name.split(".", 1)[0] if not name.startswith(".") else name


def _failed_tests(events: Sequence[Event]) -> bool:
    return any(e.kind == "test_result" and _exit_code(e) not in (None, 0) for e in events)


def _exit_code(event: Event) -> int | None:
    code = event.attrs.get("exit_code")
    return code if isinstance(code, int) else None


def _metadata(
    events: Sequence[Event], typed: TypedValues, files: list[str], facts: list[Fact],
    lang: str, reason: str,
) -> dict[str, Any]:
    edits = "\n".join(e.content for e in events if e.kind == "file_edit")
    symbols = [v for k, v in typed if k == "identifier" and v in edits]
    symbols += [f.key.rsplit("#", 1)[-1].removeprefix("symbol:") for f in facts
                if "#" in f.key or f.key.startswith("symbol:")]
    candidates = files + [v for k, v in typed if k in ("path", "file", "nodeid")]
    return {
        "files": files,
        "symbols": _dedupe(symbols)[:_MAX_LIST],
        "test_files": _dedupe(p.split("::", 1)[0] for p in candidates
                              if _TEST_PATH.search(p.split("::", 1)[0]))[:_MAX_LIST],
        "event_count": len(events),
        "tokens": sum(e.tokens if e.tokens is not None else estimate_tokens(e.content)
                      for e in events),
        "language": lang,
        "agents": _dedupe(e.agent_id for e in events if e.agent_id),
        "cut_reason": reason,
        "value_kinds": sorted({k for k, _v in typed}),  # recall boosts the kinds asked for
    }


def _importance(events: Sequence[Event], typed: TypedValues, tags: list[str]) -> float:
    salient = sum(1 for k, _v in typed if k in _SALIENT_KINDS)
    score = 0.2 + min(0.2, 0.02 * salient)
    score += 0.25 if "decision" in tags else 0.0
    score += 0.15 if "test" in tags else 0.0
    score += 0.15 if "error" in tags else 0.0
    score += 0.1 if any(e.kind == "file_edit" for e in events) else 0.0
    score += 0.05 if "research" in tags else 0.0
    return round(min(1.0, score), 3)


# ---- retrieve_when ---------------------------------------------------------------
def _retrieve_when(lang: str, phrases: list[str], typed: TypedValues, thread_id: str,
                   ran_with: list[str] | None = None) -> str:
    rank = {k: i for i, k in enumerate(_SALIENT_KINDS)}
    salient = sorted((rank[k], i, v) for i, (k, v) in enumerate(typed) if k in rank)
    values = [v if len(v) <= 60 else v[:59] + "…" for _r, _i, v in salient[:3]]
    topics = phrases[:3]
    # Identifiers spelled out ("MAX_RETRY_COUNT" -> "max retry count (maximum retry
    # count)"): a question describing a setting in words meets it in the dense text.
    said = "; ".join(identifier_words(typed))
    if lang == "ja":
        about = "・".join(topics) or f"スレッド {thread_id} の作業"
        tail = f"、または {', '.join(values)} などの正確な値" if values else ""
        named = f"（名前の語: {said}）" if said else ""
        ran = f"、またはセッションの実行環境（{'; '.join(ran_with)}）" if ran_with else ""
        return f"{about}について{tail}{named}{ran}を聞かれたとき。"
    about = ", ".join(topics) or f"the work in thread {thread_id}"
    tail = f", or for exact values such as {', '.join(values)}" if values else ""
    named = f" (named in words: {said})" if said else ""
    ran = (f", or for what the session ran with ({'; '.join(ran_with)})" if ran_with
           else "")
    return f"When a question is about {about}{tail}{named}{ran}."
