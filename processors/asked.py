"""Whether a text holds what a question asks for — one predicate, two readers.

A value of a kind the question asks for (:func:`processors.hints.holds_kind`), a shell
command line for a command question (:mod:`processors.shell`), a failure line or a
compiler's diagnostic for a failure question (:mod:`processors.failures`). Recall reads a
near memory's chunk only if it holds one; Extract replaces a word-exact cut that holds
none with lines by meaning. Patterns only, pure.
"""

from __future__ import annotations

from breadcrumb.processors.failures import DIAGNOSTIC, failure_line
from breadcrumb.processors.hints import VALUE_KINDS, holds_kind
from breadcrumb.processors.shell import MAX_CHUNK_LINES, MAX_LINE_CHARS, SHELL_COMMAND


def asks_anything(kinds: frozenset[str], failure: bool) -> bool:
    """Whether :func:`holds_asked` can tell anything: a value kind a rule names, a
    command or a failure asked for (else every text holds what is asked)."""
    return failure or "command" in kinds or not kinds.isdisjoint(VALUE_KINDS)


def holds_asked(text: str, kinds: frozenset[str], failure: bool,
                max_lines: int = MAX_CHUNK_LINES) -> bool:
    """Whether a line of ``text`` (its first ``max_lines``) holds a value of ``kinds``, a
    shell command (``"command"`` in ``kinds``) or, when ``failure``, a failure line or a
    diagnostic (``file.go:4:2: undefined: csv``: Go, gcc, tsc, ruff ...)."""
    command = "command" in kinds
    for line in text.splitlines()[:max_lines] if failure or command else ():
        head = line[:MAX_LINE_CHARS]
        if failure and (failure_line(head) or DIAGNOSTIC.match(head)):
            return True
        if command and SHELL_COMMAND.match(head):
            return True
    values = kinds & VALUE_KINDS
    return bool(values) and holds_kind(text, values)
