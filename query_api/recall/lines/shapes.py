"""What lines look like, for Extract's scorers: failures, decisions, shell commands, a
count of a thing, a diff's headers and the importer's closing note.

Patterns only, no scores (:mod:`.scoring` weighs them). Each shape was met in real
sessions (eval/agents/real_questions.jsonl): a task runner's ``[test] $ cargo …``, a
program started by its path (``C:\\…\\Scripts\\aider --model …``), a compiler's
``file.go:4:2: undefined: csv``.
"""

from __future__ import annotations

import re

from breadcrumb.processors.failures import DIAGNOSTIC as DIAGNOSTIC
from breadcrumb.processors.failures import FAILURE as FAILURE
from breadcrumb.processors.failures import FAILURE_HEADER as FAILURE_HEADER
from breadcrumb.processors.failures import failure_line as failure_line
from breadcrumb.processors.shell import MAX_LINE_CHARS as MAX_LINE_CHARS
from breadcrumb.processors.shell import SHELL_COMMAND
from breadcrumb.query_api.recall.question import QueryIntent

DECISION = re.compile(
    r"(?i)\b(decid\w*|decision|agreed|let'?s go with|going with|settled on|chose)\b"
    r"|決定|決め|採用|にします"
)
#: a tool call's arguments that say where to look (Claude Code's ``Read`` / ``Grep``,
#: Cline's ``read_file`` / ``search_files`` with its ``task_progress`` checklist, OpenCode's
#: ``read``): the request, not what was found; it names every path and plan word again
LOOKUP_ARGS = re.compile(r'^\s*\{\s*"(?:path|file_path|filePath|absolutePath|pattern|regex'
                         r'|glob)"\s*:')
DIFF_HEADER = re.compile(r"^(---|\+\+\+) |^@@")
#: the importer's closing note of a session (``importers.common``): not what anyone said
IMPORT_MARKER = re.compile(r"^end of imported [\w-]+ session \S+ \(")


def command_line(text: str, intent: QueryIntent) -> bool:
    """Whether the question asks for a command ("which command …") and ``text`` is a
    shell command line (no typed-value rule names one)."""
    return "command" in intent.kinds and SHELL_COMMAND.match(text[:MAX_LINE_CHARS]) is not None
