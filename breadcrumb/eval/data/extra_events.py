"""Extra events for the evaluation golden set, appended after ``golden_events()``.

Three more threads of tenant ``u1`` that ``breadcrumb/eval/corpus.py`` does not have:

* ``phone-validation`` (an *older* day): a phone-number regex in a look-alike file,
  so "the email regex" questions have a similar but unrelated memory to avoid;
* ``refund-report``: a look-alike SQL query (weekly refunds) beside the revenue SQL;
* ``cart-tests``: a 150-line ``pytest -v`` log with exactly one FAILED line, the long
  range the fast CI subset uses (the 2,000-line log of ``checkout-tests`` is in the
  full run only: it costs minutes of embedding on a loaded 2-core machine).

``python breadcrumb/eval/data/extra_events.py`` rewrites ``extra_events.jsonl`` next to it (the
file the evaluation reads).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

PHONE_RE = r"/^\+?[1-9]\d{7,14}$/"
REFUND_SQL = (
    "SELECT date_trunc('week', refunded_at) AS week, sum(amount_cents) AS refund_cents "
    "FROM refunds WHERE reason <> 'fraud' GROUP BY 1 ORDER BY 1;"
)
CART_FAILING_NODE = "tests/unit/test_cart.py::test_cart_total_includes_tax"
CART_LOG_TESTS = 150
CART_FAILING_POSITION = 97


def _event(user: str, thread: str, index: int, ts: datetime, role: str, kind: str,
           content: str, **extra: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "event_id": f"{user}-{thread}-{index:03d}", "user_id": user, "project_id": "shop",
        "agent_id": "claude-code", "thread_id": thread, "index": index,
        "ts": (ts + timedelta(minutes=index)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "role": role, "kind": kind, "content": content,
    }
    event.update(extra)
    return event


def _thread(user: str, thread: str, start: str, steps: list[tuple[str, str, str, dict[str, Any]]]
            ) -> list[dict[str, Any]]:
    ts = datetime.fromisoformat(start).replace(tzinfo=UTC)
    return [_event(user, thread, i, ts, role, kind, content, **extra)
            for i, (role, kind, content, extra) in enumerate(steps)]


def cart_pytest_log() -> str:
    """A ``pytest -v tests/unit`` run of 150 tests with exactly one FAILED line."""
    lines = ["============================= test session starts ==============================",
             f"collected {CART_LOG_TESTS} items", ""]
    for i in range(CART_LOG_TESTS):
        if i == CART_FAILING_POSITION:
            lines.append(f"{CART_FAILING_NODE} FAILED")
            continue
        mod = ("cart", "wishlist", "shipping")[i % 3]
        lines.append(f"tests/unit/test_{mod}.py::test_{mod}_unit_{i:03d} PASSED")
    lines += ["", f"=================== 1 failed, {CART_LOG_TESTS - 1} passed in 3.02s ==========="]
    return "\n".join(lines)


def _phone() -> list[dict[str, Any]]:
    return _thread("u1", "phone-validation", "2024-05-12T10:00:00", [
        ("user", "message", "Add phone number validation for the checkout contact form in "
         "src/contact/validate-phone.ts; accept international numbers.", {}),
        ("assistant", "file_edit", "--- a/src/contact/validate-phone.ts\n"
         "+++ b/src/contact/validate-phone.ts\n@@ -0,0 +1,4 @@\n"
         f"+export const PHONE_RE = {PHONE_RE};\n+export function validatePhone(input: string)"
         ": boolean {\n+  return PHONE_RE.test(input.replace(/[\\s-]/g, ''));\n+}\n",
         {"tool": "edit", "attrs": {"path": "src/contact/validate-phone.ts"}}),
        ("assistant", "message", "Decided: PHONE_RE accepts E.164 numbers (optional +, 8 to 15 "
         "digits); spaces and dashes are stripped first.", {}),
        ("system", "session_end", "session end", {}),
    ])


def _refunds() -> list[dict[str, Any]]:
    return _thread("u1", "refund-report", "2024-05-14T17:00:00", [
        ("user", "message", "Finance wants weekly refund totals, excluding fraud refunds.", {}),
        ("assistant", "message", f"Use:\n\n{REFUND_SQL}\n\nrefunds.amount_cents is positive.",
         {}),
        ("system", "session_end", "session end", {}),
    ])


def _cart_tests() -> list[dict[str, Any]]:
    command = "pytest -v tests/unit"
    return _thread("u1", "cart-tests", "2024-05-16T10:00:00", [
        ("user", "message", "The unit suite went red after the tax change; find the failure.",
         {}),
        ("assistant", "tool_call", command, {"tool": "bash", "attrs": {"command": command}}),
        ("tool", "tool_result", cart_pytest_log(),
         {"tool": "bash", "attrs": {"command": command, "exit_code": 1}}),
        ("assistant", "message", "One unit test fails: the cart total test expects tax to be "
         "included. I will fix cart.total() next.", {}),
        ("system", "session_end", "session end", {}),
    ])


def extra_events() -> list[dict[str, Any]]:
    """The extra events (contract-valid, deterministic)."""
    return _phone() + _refunds() + _cart_tests()


def write(path: Path) -> None:
    """Write the events as JSONL."""
    lines = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in extra_events())
    path.write_text(lines, encoding="utf-8")


if __name__ == "__main__":
    write(Path(__file__).with_name("extra_events.jsonl"))
