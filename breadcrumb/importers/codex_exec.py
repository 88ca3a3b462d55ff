"""Codex ≥ 0.144 code mode: the ``exec`` tool runs JavaScript that calls the real tools.

A ``custom_tool_call`` named ``exec`` carries code such as::

    const r = await tools.exec_command({cmd: "pytest -q", workdir: "/app"}); text(r.output);
    text(await tools.apply_patch("*** Begin Patch\\n*** Update File: a.py\\n...*** End Patch"));

Its output (``custom_tool_call_output``) starts with ``Script completed`` / ``Script
failed`` / ``Script running with cell ID N``, a ``Wall time`` line and ``Output:``. A
running cell finishes in later ``wait`` calls (``{"cell_id": "N"}``) whose outputs have
the same header. This module reads the commands and patches out of the code (the JS
string literals unescaped, so a patch is stored as the agent wrote it) and the status out
of an output. Pure functions; no JavaScript is run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_TOOL_CALL_RE = re.compile(r"\btools\.(exec_command|shell_command|shell|apply_patch)\s*\(")
_COMMAND_KEY_RE = re.compile(r"""["']?\b(?:cmd|command)["']?\s*:\s*""")
_HEADER_RE = re.compile(
    r"^Script (completed|failed|running with cell ID (\S+))\s*\n"
    r"(?:Wall time [\d.]+ seconds\s*\n)?(?:(?:Final )?Output:\s*\n?)?")
_EXIT_RES = (re.compile(r'"exit_code"\s*:\s*(-?\d+)'), re.compile(r"^exit_code (-?\d+)$", re.M),
             re.compile(r"Process exited with code (-?\d+)"))
_FILE_LINE_RE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: ", re.MULTILINE)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_QUOTES = "\"'`"


@dataclass(frozen=True, slots=True)
class ExecCode:
    """What one ``exec`` cell asks for: shell commands and patches, in order."""

    commands: tuple[str, ...]
    patches: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ExecStatus:
    """An exec / wait output: finished or still running (and in which cell)."""

    state: str  # "completed" | "failed" | "running" | "unknown"
    cell_id: str | None
    exit_code: int | None


def read_code(code: str) -> ExecCode:
    """Commands of ``tools.exec_command`` calls and every patch literal in the code."""
    commands: list[str] = []
    for match in _TOOL_CALL_RE.finditer(code):
        if match.group(1) == "apply_patch":
            continue
        key = _COMMAND_KEY_RE.search(code, match.end(), match.end() + 400)
        if key is None:
            continue
        value = string_literal(code, key.end())
        if value is not None and not value[0].lstrip().startswith("apply_patch"):
            commands.append(value[0])
    patches = [envelope(text) for text in _literals(code)
               if "*** Begin Patch" in text and _FILE_LINE_RE.search(text)]
    return ExecCode(tuple(commands), tuple(patches))


def envelope(text: str) -> str:
    """The ``*** Begin Patch`` … ``*** End Patch`` part of a text (a heredoc, a literal)."""
    start = text.index("*** Begin Patch")
    end = text.find("*** End Patch", start)
    return text[start: end + len("*** End Patch")] if end >= 0 else text[start:]


def _literals(code: str) -> list[str]:
    """The value of every JS string literal in the code (comments are not skipped)."""
    out: list[str] = []
    at = 0
    while at < len(code):
        if code[at] in _QUOTES:
            found = string_literal(code, at)
            if found is None:  # an apostrophe in a comment, a regex: not a literal
                at += 1
                continue
            out.append(found[0])
            at = found[1]
        else:
            at += 1
    return out


def string_literal(code: str, start: int) -> tuple[str, int] | None:
    """The unescaped value of the literal that opens at ``start`` and where it ends."""
    if start >= len(code) or code[start] not in _QUOTES:
        return None
    quote = code[start]
    out: list[str] = []
    at = start + 1
    while at < len(code):
        char = code[at]
        if char == quote:
            return "".join(out), at + 1
        if char == "\\" and at + 1 < len(code):
            value, at = _escape(code, at + 1)
            out.append(value)
            continue
        if char == "\n" and quote != "`":
            return None
        out.append(char)
        at += 1
    return None


def _escape(code: str, at: int) -> tuple[str, int]:
    char = code[at]
    if char in _ESCAPES:
        return _ESCAPES[char], at + 1
    if char == "u" and code[at + 1: at + 2] == "{":
        end = code.find("}", at)
        return _codepoint(code[at + 2: end]), end + 1
    if char == "u":
        return _codepoint(code[at + 1: at + 5]), at + 5
    if char == "x":
        return _codepoint(code[at + 1: at + 3]), at + 3
    if char == "\n":  # a line continuation
        return "", at + 1
    return char, at + 1  # \\ \" \' \` and any other character stand for themselves


def _codepoint(digits: str) -> str:
    try:
        return chr(int(digits, 16))
    except ValueError:
        return digits


def output_text(output: Any) -> str:
    """An exec / wait output as text: a string, or the text of its content blocks."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(str(b.get("text", "")) for b in output
                         if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def readable(text: str) -> str:
    """The output with a printed ``{"exit_code", "output"}`` object unwrapped: the header
    lines, then the command's output as it was written (its lines, its quotes), so exact
    values are searchable verbatim instead of JSON-escaped on one line."""
    header = _HEADER_RE.match(text)
    start = header.end() if header else 0
    body = text[start:].strip()
    if not (body.startswith("{") and body.endswith("}")):
        return text
    try:
        data = json.loads(body)
    except ValueError:
        return text
    if not isinstance(data, dict) or not isinstance(data.get("output"), str):
        return text
    code = data.get("exit_code")
    stated = f"exit_code {code}\n" if isinstance(code, int) else ""
    return f"{text[:start]}{stated}{data['output']}"


def status_of(text: str) -> ExecStatus:
    """Read the ``Script …`` header: finished or running, and a stated exit code."""
    header = _HEADER_RE.match(text)
    if header is None:
        return ExecStatus("unknown", None, _exit_code(text))
    if header.group(2) is not None:
        return ExecStatus("running", header.group(2).rstrip("."), None)
    return ExecStatus(header.group(1), None, _exit_code(text[header.end():]))


def _exit_code(text: str) -> int | None:
    for pattern in _EXIT_RES:
        found = pattern.findall(text)
        if found:
            return int(found[-1])
    return None
