"""Tool calls of any agent → ``tool_call`` / ``file_edit`` drafts, and their results.

Agents name the same things differently (``run_shell_command``, ``bash``, ``Shell``,
``execute_command``; ``file_path``, ``filePath``, ``path``; ``old_string``, ``oldString``,
``old_str``). :func:`call_draft` reads a call by what its arguments hold: a shell tool with
a command is a ``tool_call`` whose content is the command; a call that writes or replaces
text in a file is a ``file_edit`` (:func:`~breadcrumb.importers.common.render_edit`, the
strings verbatim and unescaped); an ``apply_patch`` envelope is a ``file_edit`` holding
the patch. :func:`result_draft` turns a tool's output into a ``tool_result`` — a
``test_result`` when the call ran tests — with the exit code the agent recorded or the
output states.
"""

from __future__ import annotations

from typing import Any

from breadcrumb.importers.common import (
    Draft,
    ToolCall,
    as_json_text,
    exit_code_in,
    is_test_command,
    patch_paths,
    render_edit,
    result_attrs,
    result_kind,
)

#: tools that run a shell command (lower-cased names)
SHELL_TOOLS = frozenset({"bash", "shell", "run_shell_command", "execute_command",
                         "run_terminal_cmd", "run_in_terminal", "powershell", "terminal",
                         "run_command", "exec_command", "command"})
_PATH_KEYS = ("file_path", "filePath", "path", "absolute_path", "absolutePath", "target_file",
              "filename", "notebook_path")  # absolutePath: Cline 3.x native tool_use
_OLD_KEYS = ("old_string", "oldString", "old_str", "search")
_NEW_KEYS = ("new_string", "newString", "new_str", "replace")
_WRITTEN_KEYS = ("content", "contents", "file_text", "code_edit", "new_source")
_PATCH_KEYS = ("patchText", "patch", "input", "diff")
_WRITE_HINTS = ("write", "create", "edit", "replace", "patch", "diff", "insert", "notebook",
                "strreplace", "str_replace")


def _first(args: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str):
            return value
    return None


def shell_command(name: str, args: dict[str, Any]) -> str | None:
    """The command a shell tool runs (``None`` for any other tool)."""
    if name.lower() not in SHELL_TOOLS:
        return None
    command = args.get("command", args.get("cmd", args.get("commandLine")))
    if isinstance(command, list) and all(isinstance(c, str) for c in command):
        return " ".join(command)
    return command if isinstance(command, str) else None


def edit_text(name: str, args: dict[str, Any]) -> tuple[str, list[str]] | None:
    """The verbatim text of a file edit and the paths it touches, or ``None``."""
    lowered = name.lower().replace("-", "_")
    if not any(hint in lowered for hint in _WRITE_HINTS):
        return None
    patch = _first(args, _PATCH_KEYS)
    if patch is not None and "*** Begin Patch" in patch:
        paths = patch_paths(patch)
        return patch, paths
    path = _first(args, _PATH_KEYS) or ""
    edits = args.get("edits")
    if isinstance(edits, list) and edits:
        parts = [render_edit(name, path, _first(e, _OLD_KEYS), _first(e, _NEW_KEYS))
                 for e in edits if isinstance(e, dict)]
        return "\n".join(parts), [path]
    old, new = _first(args, _OLD_KEYS), _first(args, _NEW_KEYS)
    if old is not None or new is not None:
        return render_edit(name, path, old, new), [path]
    written = _first(args, _WRITTEN_KEYS)
    if written is not None:
        return render_edit(name, path, written=written), [path]
    if patch is not None and path:  # a SEARCH/REPLACE or unified diff for one file
        return render_edit(name, path, written=patch), [path]
    return None


def call_draft(position: str, name: str, args: Any, ts: str | None, call_id: str | None,
               calls: dict[str, ToolCall], raw: Any = None) -> Draft:
    """A ``tool_call`` or ``file_edit`` for one call, remembered under its id."""
    arguments: dict[str, Any] = args if isinstance(args, dict) else {}
    command = shell_command(name, arguments)
    edit = None if command is not None else edit_text(name, arguments)
    call = ToolCall(name, command, is_test_command(command))
    if edit is not None:
        call = ToolCall(name)
    if call_id:
        calls[call_id] = call
    attrs: dict[str, Any] = {"tool_use_id": call_id} if call_id else {}
    if edit is not None:
        text, paths = edit
        attrs.update({"path": paths[0] if paths else "", "paths": paths})
        return Draft(position, "assistant", "file_edit", text, ts, name, attrs)
    if command is not None:
        return Draft(position, "assistant", "tool_call", command, ts, name,
                     {**attrs, "command": command})
    body = raw if raw is not None else args
    return Draft(position, "assistant", "tool_call", as_json_text(body if body is not None
                                                                   else ""), ts, name, attrs)


def result_draft(position: str, call: ToolCall | None, text: str, ts: str | None, *,
                 failed: bool | None = None, exit_code: int | None = None,
                 call_id: str | None = None, name: str | None = None) -> Draft:
    """The output of a call: ``test_result`` when it ran tests, with its exit code."""
    if exit_code is None and call is not None and call.command is not None:
        exit_code = exit_code_in(text[-2000:]) if text else None
    if failed is None and exit_code is not None:
        failed = exit_code != 0
    attrs = result_attrs(call, text, failed, exit_code)
    if call_id:
        attrs["tool_use_id"] = call_id
    return Draft(position, "tool", result_kind(call), text, ts,
                 name or (call.name if call else None), attrs)
