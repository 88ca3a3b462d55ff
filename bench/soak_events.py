"""Real-session-shaped events for the soak bench: the fleet simulator's sessions with tool
outputs of realistic sizes.

:class:`SoakAgent` is ``breadcrumb fleet``'s :class:`SimulatedAgent` (same sessions, same
deterministic event ids per run) whose tool outputs are grown to what a coding agent
really sees: every session also reads the file it edits (a 2–20 KB body with the exact
setting inside), a failing test run prints a whole pytest log (2–12 KB, the exact error
inside) and the edit is a multi-hunk diff (1–6 KB, the exact value inside).
"""

from __future__ import annotations

import random
import re
from typing import Any

from breadcrumb.commands.fleet import SimulatedAgent

_SET = re.compile(r"Set (\S+)=(\S+) and make")
_WORDS = ("config", "retry", "session", "tenant", "cache", "request", "payload", "window",
          "offset", "token", "result", "handler", "limit", "buffer", "record", "client")


def _code_line(rng: random.Random, n: int) -> str:
    a, b, c = rng.sample(_WORDS, 3)
    shapes = (f"    {a}_{b} = {c}.get(\"{b}\", {n})",
              f"    if {a} is None or {b} > {n}:",
              f"        return {c}.{a}({b}, timeout={n % 97})",
              f"def {a}_{b}({c}, {a}=None):",
              f"    log.debug(\"{a} %s {b} %d\", {c}, {n})",
              f"    for {a} in {c}.{b}s[:{n % 50}]:",
              f"# {a} {b}: see issue #{n}")
    return rng.choice(shapes)


def file_body(rng: random.Random, path: str, env: str, value: str, size: int) -> str:
    """A source file of about ``size`` bytes with the exact ``env`` default inside."""
    lines = [f"\"\"\"{path}\"\"\"", "import os", "import logging", "", "log = logging."
             "getLogger(__name__)", ""]
    planted = rng.randint(10, 40)
    n = 0
    while sum(len(x) + 7 for x in lines) < size or n < planted:  # + the line numbers
        n += 1
        lines.append(f"{env.upper()}_DEFAULT = \"{value}\"  # the value in production"
                     if n == planted else _code_line(rng, n))
    return "\n".join(f"{i + 1:5d}\t{line}" for i, line in enumerate(lines))


def pytest_log(rng: random.Random, test: str, error: str, size: int) -> str:
    """A pytest run of about ``size`` bytes ending in the exact ``error``."""
    lines = [f"{' test session starts ':=^80}",
             "platform linux -- Python 3.11.9, pytest-8.3.3, pluggy-1.5.0",
             f"collected {rng.randint(20, 400)} items", ""]
    n = 0
    while sum(len(x) + 1 for x in lines) < size:
        n += 1
        a, b = rng.sample(_WORDS, 2)
        lines.append(f"tests/test_{a}.py::test_{b}_{n} PASSED{' ' * 20}[{n % 100:3d}%]")
    lines += ["", f"{' FAILURES ':=^80}",
              f"E       {error}", f"FAILED {test} - {error}",
              f"{rng.randint(1, 3)} failed, {n} passed in {rng.uniform(1, 90):.2f}s"]
    return "\n".join(lines)


def diff(rng: random.Random, path: str, env: str, value: str, size: int) -> str:
    """A unified diff of about ``size`` bytes; one hunk sets the exact ``env`` default."""
    out = [f"--- a/{path}", f"+++ b/{path}"]
    start = rng.randint(5, 40)
    planted = False
    while sum(len(x) + 1 for x in out) < size or not planted:
        out.append(f"@@ -{start},7 +{start},8 @@")
        for _ in range(3):
            out.append(" " + _code_line(rng, start))
        if not planted:
            out += [f"-    timeout = {rng.randint(5, 60)}",
                    f"+    {env.lower()} = os.environ.get(\"{env}\", \"{value}\")"]
            planted = True
        else:
            out += ["-" + _code_line(rng, start + 1), "+" + _code_line(rng, start + 2)]
        start += rng.randint(20, 80)
    return "\n".join(out)


class SoakAgent(SimulatedAgent):
    """A simulated coding agent whose tool outputs have realistic sizes (see module doc)."""

    def __init__(self, number: int, run_id: str, users: int, user_prefix: str) -> None:
        super().__init__(number, run_id, None, users)
        self.user_id = f"{user_prefix}-{number % max(users, 1)}"
        self._inserted: list[tuple[str, str, str, str | None, dict[str, Any]]] = []
        self._fact = ("APP_TIMEOUT_MS", "30")
        self.facts: list[tuple[str, str]] = []  # (env, value) this agent planted

    def next_event(self) -> dict[str, Any]:
        if self._inserted:
            return self._event(*self._inserted.pop(0))
        event = super().next_event()
        self._grow(event)
        return event

    def planted(self, event: dict[str, Any]) -> tuple[str, str, str]:
        """The setting a user's message plants (remembered as the agent's current fact and
        among its last 21), and the current (setting, value, file path) for ``event``."""
        content = str(event["content"])
        found = (_SET.search(content) if event["kind"] == "message" and event["role"] == "user"
                 else None)
        if found:
            self._fact = (found.group(1), found.group(2).rstrip("."))
            self.facts = [*self.facts[-20:], self._fact]
        env, value = self._fact
        return env, value, str((event.get("attrs") or {}).get("path") or f"src/{env.lower()}.py")

    def _grow(self, event: dict[str, Any]) -> None:
        rng, kind, content = self.rng, event["kind"], str(event["content"])
        env, value, path = self.planted(event)
        if kind == "tool_result" and content.split(":", 1)[0].isdigit():  # the rg hit: read it
            path = f"src/{self.project}/{env.split('_')[0].lower()}.py"
            self._inserted = [
                ("assistant", "tool_call", f"cat -n {path}", "read", {"path": path}),
                ("tool", "tool_result", file_body(rng, path, env, value,
                                                  rng.randint(2_000, 20_000)),
                 "read", {"path": path, "exit_code": 0})]
        elif kind == "test_result" and (event.get("attrs") or {}).get("exit_code") == 1:
            error = content.split(" - ", 1)[-1].split("\n", 1)[0]
            test = content.split(" ", 2)[1] if content.startswith("FAILED") else "tests"
            event["content"] = pytest_log(rng, test, error, rng.randint(2_000, 12_000))
        elif kind == "file_edit":
            event["content"] = diff(rng, path, env, value, rng.randint(1_000, 6_000))

    def question(self) -> tuple[str, str] | None:
        """A recall question about a value this agent planted: (query, exact value)."""
        if not self.facts:
            return None
        env, value = self.rng.choice(self.facts)
        return f"what value did we set {env} to", value
