"""Semantic Extract: fused line scores, pool IDF, neighbours, diverse packing, timestamps."""

from __future__ import annotations

from breadcrumb.processors.lexical import query_terms
from breadcrumb.query_api.recall.extract.pack import pack
from breadcrumb.query_api.recall.extract.semantic import holds_kind
from breadcrumb.query_api.recall.lines.scoring import Scored, pool_weights, score_semantic
from breadcrumb.query_api.recall.passages import Found, Line, Passage, merge
from breadcrumb.query_api.recall.question import analyze_query, precise
from breadcrumb.query_api.recall.respond import with_timestamps
from breadcrumb.stores.ports import Hit
from breadcrumb.topics.records import Event


def _found(idx: int, text: str, dense: float | None, memory: str = "m1") -> Found:
    return Found(Passage(f"e{idx}", idx, 0, text), memory, dense)


def _count(text: str) -> int:
    return len(text.split())


def test_a_line_sharing_no_word_is_found_by_meaning() -> None:
    question = "What does Melanie do to destress?"
    pool = [_found(1, "Melanie: I've been running farther lately, great for my headspace.", 0.91),
            _found(2, "Caroline: the weather was odd", 0.80),
            _found(3, "Caroline: do you like it?", 0.78)]
    ranked = score_semantic(pool, query_terms(question), analyze_query(question), {})
    assert ranked[0][1].line.event_id == "e1"
    assert ranked[0][1].line.text.startswith("Melanie: I've been running")


def test_words_and_range_score_add_to_meaning() -> None:
    question = "Which pottery class did she sign up for?"
    pool = [_found(1, "I signed up for a pottery class yesterday", 0.80, "far"),
            _found(2, "The kids loved the museum", 0.81, "near"),
            _found(3, "Caroline: hello", 0.60, "near")]
    ranked = score_semantic(pool, query_terms(question), analyze_query(question), {"near": 0.2})
    assert ranked[0][1].line.event_id == "e1"  # lexical match beats a slightly closer vector
    tie = [_found(1, "alpha", 0.8, "a"), _found(3, "beta", 0.8, "b")]
    ranked = score_semantic(tie, {"x": 1.0}, analyze_query("x"), {"b": 1.0})
    assert ranked[0][1].memory_id == "b"  # the better range decides between equals


def test_a_term_on_every_line_weighs_less_than_a_rare_one() -> None:
    lines = [frozenset({"melanie", "pottery"})] + [frozenset({"melanie"})] * 9
    weights = pool_weights({"melanie": 1.0, "pottery": 1.0}, lines)
    assert weights["pottery"] == 1.0
    assert weights["melanie"] < 0.5


def test_the_turn_next_to_a_strong_one_is_lifted() -> None:
    question = "What got Melanie into running?"
    pool = [_found(10, "Caroline: Wow! What got you into running?", 0.95),
            _found(11, "Melanie: I wanted to clear my head.", 0.70),
            _found(40, "Melanie: I like pasta.", 0.70)]
    ranked = score_semantic(pool, query_terms(question), analyze_query(question), {})
    by_event = {sc.line.event_id: score for score, sc in ranked}
    assert by_event["e11"] > by_event["e40"]


def test_packing_prefers_new_terms_over_near_repeats_and_keeps_the_budget() -> None:
    terms = {"paris": 1.0, "museum": 1.0}
    lines = [
        (1.00, Scored(Line("e1", 1, 0, 20, "we went to paris today", 1.0), "m",
                        frozenset({"went", "paris", "today"}))),
        (0.99, Scored(Line("e2", 2, 0, 20, "we went to paris today!", 0.99), "m",
                        frozenset({"went", "paris", "today"}))),
        (0.95, Scored(Line("e3", 3, 0, 20, "the museum was closed", 0.95), "m",
                        frozenset({"museum", "closed"}))),
    ]
    chosen = pack(lines, terms, budget=10, count=_count)
    assert [c.line.event_id for c in chosen] == ["e1", "e3"]  # the repeat lost to the new term
    assert sum(_count(c.line.text) for c in chosen) <= 10


def test_merge_keeps_both_channel_scores_per_chunk() -> None:
    payload = {"event_id": "e1", "event_index": 1, "char_start": 0, "text": "hi",
               "memory_id": "m1"}
    found = merge([[Hit("c1", 0.9, payload)]], [[Hit("c1", 3.0, payload),
                                                   Hit("c2", 1.0, {"memory_id": "m"})]])
    assert list(found) == ["c1"]  # a hit without text is no passage
    assert found["c1"].dense == 0.9 and found["c1"].sparse == 3.0


def test_typed_or_failure_questions_stay_precise() -> None:
    assert precise(analyze_query("What is the email validation regex?"))
    assert precise(analyze_query("Which test failed in CI?"))
    assert not precise(analyze_query("What does Melanie do to destress?"))
    for text in ("which DB_PORT do we use now?", "show validate-email.ts", "what is retryCount?"):
        assert precise(analyze_query(text), text)
    text = "When did Caroline go to the LGBTQ support group?"
    assert not precise(analyze_query(text), text)


class _Raw:
    def get_event(self, user_id: str, event_id: str) -> Event | None:
        if event_id == "gone":
            return None
        return Event(event_id, user_id, "t", "2023-05-08T13:56:00Z", "user", "message", "x",
                     index=1)


def test_evidence_items_carry_their_events_timestamps() -> None:
    items = [{"matched_event_ids": ["e1", "gone"]}, {"matched_event_ids": []}]
    out = with_timestamps(_Raw(), "u", items)  # type: ignore[arg-type]
    assert out[0]["ts"] == "2023-05-08T13:56:00Z"
    assert out[0]["event_ts"] == {"e1": "2023-05-08T13:56:00Z"}
    assert out[1]["ts"] is None and out[1]["event_ts"] == {}


def test_a_failure_line_quoting_an_old_value_stays_a_value_line_goes() -> None:
    from breadcrumb.query_api.recall.extract.superseded import drop_superseded
    from breadcrumb.query_api.recall.passages import Extract
    from breadcrumb.topics.records import Observation, SourceRange

    memory = Observation(id="m", user_id="u", project_id=None, summary="db",
                         source_range=SourceRange("t", 0, 1), tags=(), query_hints=(),
                         retrieve_when="", importance=0.5, created_at="2024-05-01T00:00:00Z",
                         metadata={"superseded_facts": {"env:DB_PORT": {"value": "5432"}}})
    lines = (Line("e1", 0, 0, 10, "DB_PORT=5432", 1.0),
             Line("e2", 1, 0, 40, "Error: connect ECONNREFUSED 127.0.0.1:5432", 1.0))
    kept, stale = drop_superseded(Extract(lines, 20), memory, False, _count)
    assert [ln.event_id for ln in kept.lines] == ["e2"] and stale == []
    kept, stale = drop_superseded(Extract(lines, 20), memory, True, _count)
    assert len(kept.lines) == 2 and stale == ["5432"]


def test_a_diffs_removed_line_is_history_unless_the_first_value_is_asked() -> None:
    diff = "--- a/src/config/client.ts\n@@ -1 +1 @@\n-export const MAX_RETRY_COUNT = 3;\n" \
           "+export const MAX_RETRY_COUNT = 5;"
    bullets = "- retry the payments gateway three times"  # a list item, not a diff
    for question, removed_kept in (("how many retries does the gateway get?", False),
                                   ("what was the first retry count?", True)):
        ranked = score_semantic([_found(1, diff, 0.9), _found(2, bullets, 0.5)],
                               query_terms(question), analyze_query(question), {})
        texts = [sc.line.text for _score, sc in ranked]
        assert "+export const MAX_RETRY_COUNT = 5;" in texts
        assert ("-export const MAX_RETRY_COUNT = 3;" in texts) is removed_kept, texts
        assert bullets in texts


def test_a_question_for_the_current_value_stays_precise() -> None:
    assert precise(analyze_query("What is the maximum number of retries now?"))


def test_a_question_for_the_users_words_lifts_the_users_turn() -> None:
    question = "Show me exactly what the user said when asking for the inventory sync schedule."
    intent = analyze_query(question)
    assert intent.role == "user" and not precise(intent, question)
    pool = [_found(1, "在庫同期のバッチを5分ごとに回したいです。", 0.84, "m1"),
            _found(3, "+*/5 * * * * python -m shop.jobs.sync_inventory", 0.85, "m2"),
            _found(5, "session end", 0.60, "m3")]
    roles = {"e1": "user", "e3": "assistant", "e5": "system"}
    ranked = score_semantic(pool, query_terms(question), intent, {}, roles)
    assert ranked[0][1].line.event_id == "e1"
    ranked = score_semantic(pool, query_terms(question), intent, {})  # no roles: words win
    assert ranked[0][1].line.event_id == "e3"


def test_a_request_for_advice_lifts_what_the_user_said_of_themselves() -> None:
    for question in ("I'm planning a trip to Denver soon. Any suggestions on what to do there?",
                     "Can you recommend some resources where I can learn more about video "
                     "editing?", "週末の夕食に何かおすすめはある？"):
        assert analyze_query(question).role == "user", question
    question = "Can you recommend some resources where I can learn more about video editing?"
    pool = [_found(1, "I want to learn more about the advanced settings of Adobe Premiere Pro.",
                   0.85, "m1"),
            _found(2, "Here are some resources to learn more about editing: courses and books.",
                   0.86, "m1"),
            _found(4, "session end", 0.60, "m2")]
    roles = {"e1": "user", "e2": "assistant", "e4": "system"}
    intent = analyze_query(question)
    ranked = score_semantic(pool, query_terms(question), intent, {}, roles)
    assert ranked[0][1].line.event_id == "e1"
    ranked = score_semantic(pool, query_terms(question), intent, {})  # no roles: words win
    assert ranked[0][1].line.event_id == "e2"
    # a request that names a value kind or a failure stays a question for that value
    assert analyze_query("Any suggestions for the regex we validate emails with?").role is None
    assert analyze_query("Any ideas why the deploy failed?").role is None


def test_a_question_in_the_first_person_lifts_the_users_turns_a_little() -> None:
    # LongMemEval gpt4_e414231f: the user's turn says it, the assistant's reply is longer
    question = "Which bike did I get serviced?"
    intent = analyze_query(question)
    assert intent.first_person and intent.role is None
    pool = [_found(1, "I'm scheduling a maintenance check for my road bike at the shop.", 0.80),
            _found(2, "Ask the mechanic to check the bike's chain and gears.", 0.82),
            _found(4, "Have a great ride!", 0.60)]
    roles = {"e1": "user", "e2": "assistant", "e4": "assistant"}
    ranked = score_semantic(pool, query_terms(question), intent, {}, roles)
    assert ranked[0][1].line.event_id == "e1"
    ranked = score_semantic(pool, query_terms(question), intent, {})  # no roles: meaning wins
    assert ranked[0][1].line.event_id == "e2"
    # a question to the assistant about its own words is not the asker's
    assert not analyze_query("Can you remind me what you said about my bike?").first_person
    assert not analyze_query("Which bike did Melanie fix?").first_person


def test_time_elapsed_after_an_event_is_not_a_question_for_the_current_value() -> None:
    elapsed = analyze_query("How many days did it take me to find a house after I started "
                            "working with Rachel?")
    assert elapsed.temporal is None and not precise(elapsed)
    assert analyze_query("What was the retry limit after the migration?").temporal == "newest"
    assert analyze_query("How long is the timeout now?").temporal == "newest"


def test_a_cut_without_the_asked_value_kind_needs_meaning() -> None:
    question = "認証のメールアドレス正規表現をもう一回出して"
    intent = analyze_query(question)
    words_only = [{"lines": [{"text": "認証のメールアドレス正規表現で、連続ドットが通ります。"}]}]
    with_value = [{"lines": [{"text": "+export const EMAIL_RE = /^[A-Za-z0-9._%+-]+@[a-z]+$/;"}]}]
    assert not holds_kind(words_only, intent) and holds_kind(with_value, intent)
    assert holds_kind(words_only, analyze_query("What did Caroline research?"))  # no kind


def test_a_failure_question_is_held_by_a_diagnostic_line_the_value_rules_do_not_name() -> None:
    intent = analyze_query("what was the go test build failure in the CSV export?")
    go_error = [{"lines": [{"text": "internal/export/csv.go:9:2: undefined: csv"}]}]
    request = [{"lines": [{"text": "Fix ExportCSV so product names with commas stay one column"}]}]
    assert holds_kind(go_error, intent) and not holds_kind(request, intent)


def test_a_kind_no_rule_names_does_not_discard_the_word_exact_cut() -> None:
    intent = analyze_query("what command ran the email validation tests?")  # kind "command"
    cut = [{"lines": [{"text": "npx vitest run tests/auth/validate-email.test.ts"}]}]
    assert holds_kind(cut, intent)


def test_a_count_a_summary_quotes_keeps_the_word_exact_cut() -> None:
    """s05: "how many tests …" is no precise question (LongMemEval's "how many days …"
    are answered by meaning); once a ranked memory's summary quotes the count, the cut
    holding a count line stands, and one without it still needs meaning."""
    from breadcrumb.query_api.recall.extract.semantic import needs_meaning
    from breadcrumb.query_api.recall.question import Query

    text = "How many tests did the full bun test run on task #002 execute?"
    query = Query(text, analyze_query(text), {}, [])
    count = [{"lines": [{"text": "Ran 73 tests across 10 files. [20.34s]"}]}]
    other = [{"lines": [{"text": "bun test src/domain/session.test.ts"}]}]
    assert not query.precise and needs_meaning(count, query)
    assert not needs_meaning(count, query, quoted=True)
    assert needs_meaning(other, query, quoted=True) and needs_meaning([], query, quoted=True)
