"""Identifiers in words, in the dense text (observer) and the lexical query terms."""

from __future__ import annotations

import pytest

from breadcrumb.processors.hints import extract_typed_values
from breadcrumb.processors.identifier_words import identifier_words, spelled
from breadcrumb.processors.lexical import lexical_terms, query_terms


@pytest.mark.parametrize(("identifier", "said"), [
    ("MAX_RETRY_COUNT", "max retry count (maximum retry count)"),
    ("retryCount", "retry count"),
    ("src/auth/validate-email.ts", "validate email"),
    ("tests/test_checkout.py::test_apply_coupon_rounding", "apply coupon rounding"),
    ("DB_PORT", "db port (database port)"),
    ("HTTPServerError", "http server error"),
    ("orders", None), ("v2_3", None), ("test_cart.py", None),
])
def test_spelled(identifier: str, said: str | None) -> None:
    assert spelled(identifier) == said


def test_identifier_words_of_a_diff() -> None:
    diff = ("--- a/src/config/client.ts\n+++ b/src/config/client.ts\n"
            "-export const MAX_RETRY_COUNT = 3;\n+export const MAX_RETRY_COUNT = 5;\n"
            "const retryDelayMs = 200;")
    said = identifier_words(extract_typed_values(diff))
    assert said == ["max retry count (maximum retry count)",
                    "retry delay ms (retry delay milliseconds)"]


def test_japanese_description_meets_the_identifiers_parts() -> None:
    doc = set(lexical_terms("+export const MAX_RETRY_COUNT = 5;"))
    ja = query_terms("リトライの最大回数は今いくつ？")
    assert {"retry", "max", "count"} <= set(ja) & doc
    en = query_terms("What is the maximum number of retries now?")
    assert {"retry", "max"} <= set(en) & doc  # "retries" -> "retry", "maximum" -> "max"


def test_observer_spells_identifiers_in_retrieve_when() -> None:
    from breadcrumb.processors.observer import ObserverConfig, observe
    from breadcrumb.topics.records import ClosedRange, Event, SourceRange

    content = "+export const MAX_RETRY_COUNT = 5;"
    event = Event.from_dict({
        "event_id": "e0", "user_id": "u", "thread_id": "t", "index": 0,
        "ts": "2026-01-01T00:00:00Z", "role": "assistant", "kind": "file_edit",
        "content": content, "attrs": {"path": "src/config/client.ts"}})
    closed = ClosedRange("u", None, SourceRange("t", 0, 0), ("e0",), "flush")
    obs = observe([event], closed, ObserverConfig())
    assert "max retry count (maximum retry count)" in obs.retrieve_when
    assert "max retry count" in obs.embedding_text
    assert obs.retrieve_when.endswith(".")
