"""What a failure line looks like: a tool's, a compiler's, a shell's or the OS's own
words that something failed, and not a count of none (``UVM_ERROR :    0``). Patterns
only: Extract weighs them; Recall reads a near memory's chunk for a failure question
only if it holds one (:func:`processors.asked.holds_asked`).
"""

from __future__ import annotations

import re

from breadcrumb.processors.shell import MAX_LINE_CHARS

#: a failure line; a lower-case ``error`` only where a tool reports one (``error:``,
#: ``error[E0599]``, ``npm error code``, tsc's ``error TS2304``), not in prose
FAILURE = re.compile(r"(FAIL|ERROR|Error|Exception|Traceback|assert|panic|失敗|エラー"
                     r"|\berror(?=[\[:]| code\b| TS\d))"
                     # what a shell or the OS says: ``zsh:11: operation not permitted: …``,
                     # ``/bin/bash: line 1: cd: sim: No such file or directory``
                     r"|^\S*sh: (?:line )?\d+: |(?i:no such file or directory|permission denied"
                     r"|operation not permitted|command not found"
                     # an access check's refusal: Odoo's ``You are not allowed to access
                     # 'Recruitment Stages' (hr.recruitment.stage) records.``
                     r"|not allowed to access|access denied)"
                     # a compiler's diagnostic: ``internal/export/csv.go:4:2: undefined: csv``
                     r"|^\S+\.\w{1,5}:\d+:\d+: \S")
#: a count of no failures: ``UVM_ERROR :    0``, ``Errors: 0``, ``0 failed``, ``0 errors``
_NONE_FAILED = re.compile(r"(?i)(?:errors?|failures?|failed|fatal)\w*"
                          r"(?:\s+(?:reports?|messages?|count|total|found))?\**\s*"
                          r"[:=]?\s*0(?![\w.])|(?<![\w.])0\s+(?:errors?|failures?|failed)\b")
#: a compiler / linter diagnostic: ``path:line[:col]: message`` (Go, gcc, tsc, ruff ...):
#: what :func:`processors.asked.holds_asked` accepts as a failure line besides
#: :data:`FAILURE` (whose own diagnostic form wants the column and a file extension:
#: ``grep -n`` output is not one, and is no failure line for Extract's scoring)
DIAGNOSTIC = re.compile(r"^\s*[\w./\\-]+:\d+(?::\d+)?:\s*\S")
#: a failure header in other words than :data:`FAILURE`'s (a line ending in ``:`` whose
#: next line says what failed): ``🚨 Invalid docs.json:``, ``Could not resolve:``
FAILURE_HEADER = re.compile(r"(?i)\b(invalid|failed|cannot|could not|unable to|rejected"
                            r"|not allowed|denied)\b")


def failure_line(text: str) -> bool:
    """Whether ``text`` (its first :data:`MAX_LINE_CHARS`) says something failed: a
    :data:`FAILURE` line that is not a count of none (``UVM_ERROR :    0``)."""
    head = text[:MAX_LINE_CHARS]
    return FAILURE.search(head) is not None and _NONE_FAILED.search(head) is None
