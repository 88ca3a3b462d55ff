"""Decide: exact-value asks in Japanese and English recall the source; gist asks do not."""

from __future__ import annotations

import pytest

from processors.decide import AMBIGUOUS, EXACT, SUMMARY_OK, decide


@pytest.mark.parametrize(
    "query",
    [
        "認証のメールアドレス正規表現をもう一回出して",
        "what was the exact email regex we decided?",
        "which port does the database use",
        "show me the SQL for the orders table",
        "what is AUTH_ALLOWED_DOMAINS set to",
        "the failing line in the pytest log",
        "src/auth/validate-email.ts の変更内容",
        "DBのポートは?",
    ],
)
def test_exact_value_questions(query: str) -> None:
    assert decide(query).classification == EXACT


@pytest.mark.parametrize(
    "query",
    ["summarize what we did on the deploy pipeline", "認証まわりの経緯をざっくり教えて",
     "what did we decide about sign-up?"],
)
def test_summary_questions(query: str) -> None:
    assert decide(query).classification == SUMMARY_OK


def test_unknown_is_ambiguous_and_modes_override() -> None:
    assert decide("sign-up problems last week").classification == AMBIGUOUS
    assert decide("the exact regex", mode="summary").classification == SUMMARY_OK
    assert decide("overview please", mode="source").classification == EXACT
