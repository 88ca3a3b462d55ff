"""Decide: exact-value asks in Japanese and English recall the source; gist asks do not."""

from __future__ import annotations

import pytest

from breadcrumb.query_api.recall.decide import AMBIGUOUS, EXACT, SUMMARY_OK, decide
from breadcrumb.query_api.recall.question import analyze_query


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


@pytest.mark.parametrize("query", [
    "Which pgbouncer image did we add?", "Which paper on adaptive token buckets did we find?",
    "What was DB_PORT set to when we first set up the database?", "在庫同期の cron 式は？",
])
def test_which_questions_ask_for_values_even_with_did_we(query: str) -> None:
    assert decide(query).classification == EXACT


def test_intent_kinds_and_time() -> None:
    intent = analyze_query("What is the current email regex?")
    assert "regex" in intent.kinds and intent.temporal == "newest"
    assert analyze_query("最初に DB を立てた時の DB_PORT は？").temporal == "oldest"
    assert analyze_query("CI の全テストで落ちていたテストはどれ？").failure
    assert analyze_query("redis のイメージは？").kinds >= {"image"}


def test_classifier_only_when_no_rule_matched() -> None:
    calls: list[str] = []

    def classifier(query: str) -> dict[str, str]:
        calls.append(query)
        return {"classification": SUMMARY_OK, "reason": "gist"}

    assert decide("the exact regex", classifier=classifier).classification == EXACT
    assert calls == []
    got = decide("sign-up problems last week", classifier=classifier)
    assert got.classification == SUMMARY_OK and "classifier" in got.reason
    with pytest.raises(ValueError):
        decide("sign-up problems", classifier=lambda q: {"classification": "maybe"})


@pytest.mark.parametrize(("query", "temporal"), [
    ("最初に決めた認証のメールアドレス正規表現をもう一回出して", "oldest"),
    ("元の正規表現は？", "oldest"),
    ("以前のポートは？", "oldest"),
    ("前の DB_PORT は？", "oldest"),
    ("変更前のイメージタグは？", "oldest"),
    ("What was the original regex?", "oldest"),
    ("Which port did we use initially?", "oldest"),
    ("the old image tag", "oldest"),
    ("What was the previous DB_PORT?", "oldest"),
    ("Which port did we use before we changed it?", "oldest"),
    ("What is the current email regex after the double-dot fix?", "newest"),
    ("連続ドット対策後のメールアドレス正規表現は？", "newest"),
    ("今アプリが DB に繋いでいるポートは？", "newest"),
    ("2日前のログのエラーは？", None),  # "ago", not "previous"
    ("How old is the cache?", None),
    ("復旧手順のコマンドは？", None),  # 復旧 (recovery) is not 旧 (old)
    ("Which redis image do we use?", None),
    ("What was the original port, and which one do we use now?", None),  # both: no preference
])
def test_temporal_intent_en_ja(query: str, temporal: str | None) -> None:
    assert analyze_query(query).temporal == temporal


@pytest.mark.parametrize("query", [
    "Why did we change DB_PORT from 5432 to 6432?",  # names a literal: still a why
    "Why did the email regex need a second fix?",  # a value kind is the topic
    "What was the reason for moving to pgbouncer?",
    "Did we ever allow signups from any email domain?",
    "Are agents allowed to use float for money?",
    "When did we decide to put pgbouncer in front of postgres?",
    "Who asked for the inventory sync to run every five minutes?",
    "Which email regex did we reject and why?",
    "What did we rule out for the cache?",
    "なぜ DB_PORT を 6432 に変えたの？",
    "メールアドレスの正規表現を直した理由は？",
    "クーポンの丸めで float の計算を使っていたことはある？",
    "pgbouncer を導入すると決めたのはいつ？",
    "在庫同期を5分ごとにしたいと言ったのは誰？",
    "却下したメールアドレスの正規表現とその理由は？",
    "Redis の導入を見送った理由は？",
])
def test_why_whether_when_who_rejected_are_summary_questions(query: str) -> None:
    got = decide(query)
    assert got.classification == SUMMARY_OK, got


@pytest.mark.parametrize("query", [
    "What is DB_PORT now?",
    "What is the checkout rate limit now?",
    "What is the current rate limit?",
    "今の DB_PORT は？",
    "今のチェックアウトのレート制限は？",
    "リトライの最大回数は今いくつ？",
    # a why plus a value ask is a value ask
    "Why did we move the app to pgbouncer, and which port does it use now?",
    "Why did we change MAX_RETRY_COUNT and what is it now?",
    "pgbouncer を入れた理由と、今の DB のポートは？",
    "DB_PORT を変えた理由と今の値は？",
    # an exact word wins over a why
    "Quote exactly why we rejected the v1 regex",
    "pgbouncer を入れた理由について、ユーザーの発言を原文で見せて",
])
def test_now_and_why_plus_value_questions_ask_for_the_value(query: str) -> None:
    got = decide(query)
    assert got.classification == EXACT, got


@pytest.mark.parametrize("query", [
    "What's the status of the migration now?", "今の状況は？", "Why did we add pgbouncer?"])
def test_gist_now_questions_stay_summary(query: str) -> None:
    assert decide(query).classification == SUMMARY_OK


@pytest.mark.parametrize("query", ["When did Maria adopt Shadow?", "When did John move to Boston?"])
def test_when_of_an_event_is_not_a_decision(query: str) -> None:
    assert decide(query).classification != SUMMARY_OK  # the date is in the source


def test_decide_accuracy_over_the_golden_set() -> None:
    """Every golden question (incl. why / whether / now, en + ja): accuracy >= 0.95."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "breadcrumb" / "eval" / "data" / "questions.jsonl"
    rows = [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]
    assert sum(r["category"].startswith("decide_") for r in rows) >= 16
    wrong = [r["id"] for r in rows if decide(r["question"]).classification != r["classification"]]
    assert 1 - len(wrong) / len(rows) >= 0.95, wrong


@pytest.mark.parametrize("question", [
    "Show me exactly what the user said when asking for the inventory sync schedule.",
    "What exactly did the user ask for when the signup form accepted foo@bar?",
    "pgbouncer を入れた理由について、ユーザーの発言を原文で見せて",
])
def test_a_question_for_the_users_words_names_the_role(question: str) -> None:
    assert analyze_query(question).role == "user"


def test_other_speakers_and_plain_value_questions_name_no_role() -> None:
    assert analyze_query("What is the email regex?").role is None
    assert analyze_query("What did Caroline say about the parade?").role is None


@pytest.mark.parametrize("query", [
    # issue 46: the answer is a `PASS tests/<name>.test.ts` line, a path, a command line;
    # the words after the head's verb say what the file checks, not a why / whether ask
    "Which test file checks that the sixth failed login is rejected?",
    "Which test file checks whether the login limit rejects the sixth attempt?",
    "What test file checks the summary endpoint?",
    "Which test checks why the parser fails?",
    "which file explains the reason for the retry?",
    "which command shows whether redis is up?",
    "What script reports the status of the migration?",
    "What test file checks the limit, and why did we add it?",
    "ログインの6回目が拒否されるかどうかを確認しているテストファイルはどれ？",
    "どのテストファイルが6回目のログイン失敗を拒否しているか確認している？",
    "どのファイルでメール検証の経緯を説明している？",
    "却下されたクーポンを返金するかどうかをテストしているファイルは何？",
])
def test_which_file_test_or_command_asks_for_the_value(query: str) -> None:
    got = decide(query)
    assert got.classification == EXACT, got


@pytest.mark.parametrize("query", [
    "Why did we change the test file?",  # a why about a file stays a why
    "Which file did we reject and why?",  # the head's own verb rejects
    "what happened to the test file?",
    "どのファイルを変えた理由は？",  # the Japanese question ends by asking the reason
])
def test_a_why_about_a_file_stays_a_summary_question(query: str) -> None:
    got = decide(query)
    assert got.classification == SUMMARY_OK, got
