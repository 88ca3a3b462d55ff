"""What a shell command line looks like: the value a "which command did we use to …"
question asks for, met in real sessions (eval/agents/real_questions.jsonl): a task runner's
``[test] $ cargo …``, a program started by its path (``C:\\…\\Scripts\\aider --model …``),
``cd x && ren …``, ``VAR=value`` prefixes. Patterns only (Extract weighs them; Recall
reads a near memory's chunk for a command question only if it holds one).
"""

from __future__ import annotations

import re

MAX_LINE_CHARS = 4000  # a line is read this far (a minified bundle is one line)
MAX_CHUNK_LINES = 200  # :func:`processors.asked.holds_asked` reads a text this deep

#: a shell command line (the value a "which command ..." question asks for): a prompt,
#: ``cd x &&``, ``VAR=value`` prefixes allowed, then a known program or a script
SHELL_COMMAND = re.compile(
    r"^\s*(?:\[[\w:.-]+\]\s+)?"  # a task runner's prefix: mise's ``[test] $ cargo …``
    r"(?:[$>]\s+)?(?:sudo\s+)?(?:cd\s+\S+\s*&&\s*)?(?:[A-Z_][A-Z0-9_]*=\S+\s+)*"
    r"(?:(?:[A-Za-z]:|~)?(?:[\\/][\w.-]+)*[\\/])?"  # a program by its path: C:\…\Scripts\aider
    # not a package manager's own log line: ``npm error code ERESOLVE``, ``npm WARN …``
    r"(?!(?:npm|pnpm|yarn)\s+(?:ERR!|(?:error|warn|WARN|notice|info|verb|http|timing|sill)\b))"
    r"(?:npx|npm|pnpm|yarn|bunx?|git|make|cargo|go|python3?|pip3?|uvx?|pytest|docker"
    r"|docker-compose|kubectl|helm|bash|sh|zsh|node|deno|tsc|curl|wget|rg|grep|find|sed"
    r"|awk|terraform|gcloud|aws|az|dotnet|mvn|gradle|rustc|ruff|mypy|aider|claude|codex"
    r"|gh|brew|apt(?:-get)?|ls|cat|mkdir|rm|cp|mv|chmod|ren|del|findstr|tail|head|java"
    r"|ruby|bundle|rails|php|composer|mix|flutter|dart|swift|xcodebuild|adb|ssh|scp"
    r"|rsync|tar|unzip|psql|mysql|sqlite3|redis-cli|openssl|jq|yq|just|task|turbo|nx"
    r"|vite|next|jest|vitest|playwright|tox|nox|poetry|pdm|hatch|conda|mamba|ollama"
    r"|\./\S+|\S+\.sh)(?:\.exe)?(?=\s|$)")
