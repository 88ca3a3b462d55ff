"""Where a line of a file edit stands: header, old side, new side, markers.

The importers render an edit as ``<Tool> <path>`` then ``--- old`` / ``+++ new`` sections
(``importers.common.render_edit``), a write as ``<Tool> <path>`` then the content, and
keep aider / Cline SEARCH / REPLACE blocks and unified diffs as written. Extract's
scorers (:mod:`.scoring`) ask :class:`EditLines` which side a line is on, leave the
markers out and let the edit's header (the file the user names) count for its lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from breadcrumb.processors.lexical import lexical_terms
from breadcrumb.query_api.recall.lines.shapes import MAX_LINE_CHARS
from breadcrumb.query_api.recall.lines.term_groups import TermGroups
from breadcrumb.query_api.recall.passages import Passage

#: a unified diff (its hunk or file headers)
DIFF = re.compile(r"^(@@ -\d|--- a/|\+\+\+ b/)", re.M)
#: the markers of an importer's rendered edit (``common.render_edit``) and of SEARCH /
#: REPLACE blocks: no evidence
EDIT_MARKERS = frozenset({"--- old", "+++ new", "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE",
                           "------- SEARCH", "+++++++ REPLACE"})
RENDERED_EDIT = re.compile(r"^--- old$(?s:.*)^\+\+\+ new$|^(<<<<<<<|-------) SEARCH$"
                           r"|^\*\*\* (?:Update|Add) File: ", re.M)
#: a file's header inside a patch of several: Codex ``apply_patch`` (``*** Update File:
#: path``), a unified diff's ``+++ b/path`` / ``diff --git a/x b/path``
_FILE_HEADER = re.compile(
    r"^(?:\*\*\* (?:Update|Add|Delete) File: |\+\+\+ (?:b/)?|diff --git )(\S.*)$", re.M)
#: SEARCH / REPLACE blocks (aider, Cline): the old side, the divider, the end
_SEARCH, _DIVIDER, _REPLACE = ("<<<<<<< SEARCH", "------- SEARCH"), "=======", \
    (">>>>>>> REPLACE", "+++++++ REPLACE")


def removed_lines(texts: Iterable[str]) -> frozenset[str]:
    """The lines edits took out (a diff's ``-`` lines, stripped) that no edit put back:
    the same line in an earlier output of the range (``cat`` before the edit) is the
    file as it was, not as it is."""
    removed: set[str] = set()
    added: set[str] = set()
    for text in texts:
        for line in text.split("\n"):
            if line.startswith("-") and not line.startswith("---"):
                removed.add(line[1:].strip())
            elif line.startswith("+") and not line.startswith("+++"):
                added.add(line[1:].strip())
    return frozenset(removed - added - {""})


def is_edit(passage: Passage) -> bool:
    """A file edit: by its kind, or (a chunk passage has none) by an importer's rendered
    ``--- old`` / ``+++ new`` sections, a patch's file header (``*** Update File:``) or a
    unified diff's (``--- a/``, ``+++ b/``, ``@@ -1``)."""
    return (passage.kind == "file_edit" or RENDERED_EDIT.search(passage.text) is not None
            or DIFF.search(passage.text) is not None)


class EditLines:
    """Where a line of a ``file_edit`` stands: the header naming the file (``Edit path``,
    ``apply_patch`` …), the ``--- old`` / ``+++ new`` markers of an importer's rendered
    edit, and the side of each line (``old``, ``new``: a ``+++ new`` section, a write's
    content, a diff's ``+`` line; ``""``: let the ``+`` / ``-`` prefix tell). A line of
    the edit is about the file its header names: the question terms the header holds
    (the file the user names) count for the line too, so an added ``resolver = "3"`` is
    not outranked by its own ``Edit …/Cargo.toml`` header. A patch of several files
    (``*** Update File: Cargo.toml``, ``+++ b/web/app.js``) has a header per file: a line
    is about the file of the header above it."""

    def __init__(self, passage: Passage, terms: dict[str, float], groups: TermGroups) -> None:
        self.groups = groups  # a question word's terms count once (:mod:`.term_groups`)
        self.header_end = -1
        self.new_from = self.old_from = -1
        self.marked = False
        self.header_terms: dict[str, float] = {}
        if passage.offset == 0:  # the passage starts at the event: its first line is the header
            first = passage.text.split("\n", 1)[0]
            self.header_end = len(first)
            head = set(lexical_terms(first[:MAX_LINE_CHARS]))
            self.header_terms = {t: v for t, v in terms.items() if t in head}
        # (where it starts in the event, the question terms it names) of each file header
        self.files: list[tuple[int, dict[str, float]]] = []
        for m in _FILE_HEADER.finditer(passage.text):
            named = set(lexical_terms(m.group(1)[:MAX_LINE_CHARS]))
            self.files.append((passage.offset + m.start(),
                               {t: v for t, v in terms.items() if t in named}))
        self.unified = DIFF.search(passage.text) is not None

    def marker(self, start: int, text: str) -> bool:
        """Whether this is a marker line (``--- old`` / ``+++ new``, a SEARCH / REPLACE
        block's) and note the side the lines after it are on."""
        if text == "--- old" or text in _SEARCH:
            self.old_from, self.new_from, self.marked = start, -1, True
            return True
        if (text == "+++ new" or text == _DIVIDER) and self.marked:
            self.new_from = start
            return True
        if text in _REPLACE and self.marked:
            self.old_from = self.new_from = -1
            return True
        return False

    def is_header(self, start: int) -> bool:
        return start == 0 and self.header_end >= 0

    def side(self, start: int) -> str:
        if self.new_from >= 0 and start > self.new_from:
            return "new"
        if self.old_from >= 0 and start > self.old_from:
            return "old"
        if self.marked:
            return ""  # between blocks: the +/- prefix tells, if any
        if not self.marked and not self.unified and self.header_end >= 0 \
                and start > self.header_end:
            return "new"  # a write: its content is what the file now holds
        return ""

    def context(self, text: str, start: int = -1) -> float:
        """The question terms of the line's header (the file it is about) it lacks."""
        header = self.header_terms
        for at, named in self.files:  # the file header above the line, if any
            if at < start:
                header = {**header, **named}
            else:
                break
        if not header:
            return 0.0
        own = set(lexical_terms(text[:MAX_LINE_CHARS]))
        held = [t for t in self.groups.terms if t in own]
        both = held + [t for t in header if t not in own and t in self.groups.terms]
        return self.groups.weight(both) - self.groups.weight(held)
