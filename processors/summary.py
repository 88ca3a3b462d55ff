"""The summary of a source range: a readable gist in the range's own language.

Built from the range's events alone. The labels ("files:", "→", "tests pass") are in the
language the range is mostly in (:func:`range_language`: the user's messages vote, one
vote each), not in the language of the first kana that appears. A range that turns to
another request (a ``topic_change``, or a user message in another language than the
request before it) is cut into :func:`exchanges`, and each conclusion is shown after the
request it answers, never after the range's first request. Quoted requests and
conclusions stay verbatim in their own language.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from breadcrumb.processors.phrases import detect_language
from breadcrumb.processors.test_runs import TEST_COMMAND, TestRun
from breadcrumb.topics.records import Event

TypedValues = list[tuple[str, str]]

_TALK = ("message", "note", "topic_change")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|(?<=[。！？])")
#: A sentence that carries nothing to summarise ("Thanks.", "ありがとう。", "Agreed.").
_FILLER = re.compile(
    r"(?i)^(thanks?( a lot| you)?|thx|ok(ay)?|sure|great|agreed|yes|yeah|yep|no problem|"
    r"perfect|nice|got it|sounds good|ありがとう(ございます)?|どうも|了解(です|しました)?|"
    r"はい|いいですね|お願いします|承知しました)[\s.!?。！？、,]*$"
)
_WORDY = re.compile(r"[A-Za-z\u3040-\u30ff\u4e00-\u9fff]{3,}")
#: A patch's envelope (Codex ``apply_patch``): no summary; its file lines say what it does.
_PATCH_ENVELOPE = re.compile(r"^\*\*\* (?:Begin|End) Patch\b|^\*\*\* End of File\b")
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (\S.*)$")
#: A tool's markup around what it read (``<path>…</path>``, ``<content>``): the inside counts.
_MARKUP = re.compile(r"</?[a-z][\w-]*>")
#: Where an agent's harness wraps the human's own words (Cursor ``<user_query>``, Cline
#: ``<task>`` / ``<feedback>`` / ``<answer>`` / ``<user_message>``): the request is inside,
#: not in the attachments or links the harness puts around it.
_ASKED = re.compile(r"<(user_query|user_message|task|feedback|answer)>\s*(.*?)\s*(?:</\1>|$)",
                    re.DOTALL)
#: A line that is markup alone (``<attached_files>``, ``</user_query>``): no words of anyone's.
_TAG_LINE = re.compile(r"^\s*(?:</?[a-z][\w-]*(?:\s[^<>]*)?>\s*)+$")
#: A block of markup a harness adds to the user's turn, from a line that opens it to the
#: line that closes it: a system reminder, the environment, attached files, skills
#: (``<system-reminder>`` … ``</system-reminder>``). What is inside it is nobody's words.
_ADDED_BLOCK = re.compile(r"^[ \t]*<([a-z][\w-]*)(?:\s[^<>\n]*)?>.*?</\1>[ \t]*$",
                          re.DOTALL | re.MULTILINE)
#: What a tool call given as its arguments' JSON (``Read``, ``Grep``, ``read_file`` …) is
#: about, in this order: where it looks, then what it looks for, then what it says.
_ARG_KEYS = ("file_path", "filePath", "path", "absolute_path", "absolutePath", "target_file",
             "notebook_path", "url", "pattern", "regex", "glob", "query", "description",
             "prompt", "question", "response", "message")
#: Exchanges shown in a summary (the range's first ones; files and tests follow).
_MAX_EXCHANGES = 3


def _language(event: Event) -> str:
    return detect_language(event.content[:2000])


def range_language(events: Sequence[Event]) -> str:
    """The language the range is mostly in: one vote per user message (per conversation
    event when the user says nothing, the whole text when nobody talks); a tie goes to
    the language that spoke first."""
    talk = [e for e in events if e.kind in _TALK and e.content.strip()]
    voters = [e for e in talk if e.role == "user" and e.kind == "message"] or talk
    if not voters:
        return detect_language("\n".join(e.content[:2000] for e in events))
    votes: Counter[str] = Counter()
    first: dict[str, int] = {}
    for i, event in enumerate(voters):
        lang = _language(event)
        votes[lang] += 1
        first.setdefault(lang, i)
    return max(votes, key=lambda lang: (votes[lang], -first[lang]))


def exchanges(events: Sequence[Event]) -> list[list[Event]]:
    """The range cut before each ``topic_change`` and each user message in another
    language than the request it follows; contiguous, every event in exactly one."""
    out: list[list[Event]] = [[]]
    asked: str | None = None
    for event in events:
        new = event.kind == "topic_change"
        if event.role == "user" and event.kind == "message" and event.content.strip():
            lang = _language(event)
            new = new or (asked is not None and lang != asked)
            asked = lang
        if new and out[-1]:
            out.append([])
        out[-1].append(event)
    return out


def gist(text: str, limit: int = 140) -> str:
    """The first informative sentence of ``text`` (courtesies and wordless lines such as a
    Markdown rule ``---`` skipped), at most ``limit``."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("```")]
    lines = [ln for ln in lines if _WORDY.search(ln)] or lines
    sentences = [s.strip() for ln in lines[:3]
                 for s in _SENTENCE_END.split(" ".join(ln.split())) if s.strip()]
    if not sentences:
        return ""
    first = next((s for s in sentences if not _FILLER.match(s)), sentences[0])
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def _said(events: Sequence[Event], role: str, last: bool = False, limit: int = 140) -> str:
    picked = [e for e in events if e.role == role and e.kind == "message" and e.content.strip()]
    if not picked:
        return ""
    return gist(own_words((picked[-1] if last else picked[0]).content), limit)


def own_words(text: str) -> str:
    """A message without its harness's wrapping: the inside of the first tag an agent puts
    the human's words in (``<user_query>``), else the text without lines of markup alone."""
    asked = _ASKED.search(text)
    if asked is not None and asked.group(2).strip():
        return asked.group(2)
    return "\n".join(ln for ln in text.splitlines() if not _TAG_LINE.match(ln))


def users_words(text: str) -> str:
    """What the user typed in a turn: :func:`own_words`, and without the blocks of markup
    its harness adds around it (``<system-reminder>…</system-reminder>``,
    ``<environment_context>…``): their boilerplate ("DO NOT mention this to the user
    explicitly …") is no word of the user's."""
    asked = _ASKED.search(text)
    if asked is not None and asked.group(2).strip():
        return asked.group(2)
    return own_words(_ADDED_BLOCK.sub("", text))


def _opening(event: Event, ja: bool) -> str:
    """What a range without a user request starts with: the command, else a wordy line."""
    command = event.attrs.get("command") or (event.content if event.kind == "tool_call" else "")
    if isinstance(command, str) and command.startswith("{") and not event.attrs.get("command"):
        command = call_gist(event.tool, command)
    if isinstance(command, str) and command.strip():
        return f"`{gist(command, 100)}` の出力" if ja else f"output of `{gist(command, 100)}`"
    lines = event.content.splitlines()[:50]
    files = [f"{m.group(1).lower()} {m.group(2).strip()}" for ln in lines
             if (m := _PATCH_FILE.match(ln))]
    if files:  # "*** Begin Patch": the patch's files, then its first wordy added line
        added = next((ln[1:].strip() for ln in lines if ln.startswith("+")
                      and _WORDY.search(ln)), "")
        head = ", ".join(dict.fromkeys(files[:3]))
        return head + (f": {gist(added, 100)}" if added else "")
    for line in lines:
        line = _MARKUP.sub(" ", line).strip()
        if _WORDY.search(line) and not _PATCH_ENVELOPE.match(line):
            return gist(line)
    return gist(event.content)


def call_gist(tool: str | None, arguments: str) -> str:
    """A tool call stored as its arguments' JSON, as a reader says it: ``Read /src/app.py``,
    ``Grep TODO``; the JSON itself when it holds no string to name (or is no JSON)."""
    try:
        args = json.loads(arguments)
    except ValueError:
        return arguments
    value = _named_arg(args) if isinstance(args, dict) else None
    if value is None:
        value = next(_strings(args), None)
    if value is None:
        return arguments
    return f"{tool} {value}" if tool else value


def _named_arg(args: dict[str, Any]) -> str | None:
    for key in _ARG_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _strings(value: Any) -> Any:
    """The non-empty strings of a JSON value, depth first."""
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _exit_code(event: Event) -> int | None:
    code = event.attrs.get("exit_code")
    return code if isinstance(code, int) else None


def _test_outcome(events: Sequence[Event], ja: bool) -> str:
    results = [e for e in events if e.kind == "test_result" or (
        e.kind == "tool_result" and TEST_COMMAND.search(str(e.attrs.get("command", ""))))]
    if not results:
        return ""
    code = _exit_code(results[-1])
    if code == 0:
        return "テスト成功 (exit 0)" if ja else "tests pass (exit 0)"
    shown = "?" if code is None else str(code)
    return f"テスト失敗 (exit {shown})" if ja else f"tests fail (exit {shown})"


def _exchange_parts(events: Sequence[Event], ja: bool) -> list[str]:
    """Each exchange's request, then its own conclusion."""
    parts: list[str] = []
    cut = exchanges(events)
    limit = 140 if len(cut) == 1 else 100
    for n, part in enumerate(cut[:_MAX_EXCHANGES]):
        request = _said(part, "user", limit=limit) or (_opening(part[0], ja) if n == 0 else "")
        conclusion = _said(part, "assistant", last=True, limit=limit)
        parts.append(request)
        if conclusion and conclusion != request:
            parts.append(("結論: " if ja else "→ ") + conclusion)
    return parts


def summarize(
    events: Sequence[Event], lang: str, files: list[str], typed: TypedValues, limit: int,
    run: TestRun | None = None,
) -> str:
    """Requests with their conclusions, files touched, first error, test outcome; in
    ``lang`` (labels and separators), clipped to ``limit`` characters."""
    ja = lang == "ja"
    errors = [] if run else [v for k, v in typed if k == "error"]
    parts = _exchange_parts(events, ja)
    parts.insert(1, run.summary(ja) if run else "")
    if files:
        parts.append(("ファイル: " if ja else "files: ") + ", ".join(files[:4]))
    if errors:
        parts.append(("エラー: " if ja else "error: ") + gist(errors[0], 100))
    outcome = _test_outcome(events, ja)
    if outcome:
        parts.append(outcome)
    text = ("／" if ja else "; ").join(p for p in parts if p)
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"
