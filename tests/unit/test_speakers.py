"""A question that names a transcript speaker lifts that speaker's own lines."""

from __future__ import annotations

from breadcrumb.processors.lexical import query_terms
from breadcrumb.query_api.recall.lines.scoring import SPEAKER_BOOST, score_semantic
from breadcrumb.query_api.recall.lines.speakers import named_speakers, speaker
from breadcrumb.query_api.recall.passages import Found, Passage
from breadcrumb.query_api.recall.question import analyze_query

CHAT = ["Melanie: We love painting together lately, nature mostly.",
        "Caroline: Thanks, Melanie! Painting sounds lovely.",
        "Melanie: The kids loved the museum.",
        "Caroline: I went to a support group.",
        "Melanie: Sunsets are my favourite.",
        "Caroline: Cool! What did you paint?"]


def test_a_speaker_is_a_capitalised_prefix_seen_on_several_lines() -> None:
    assert speaker("Melanie: hi") == "Melanie"
    assert speaker("Dr. Jane Roe: hello") == "Dr. Jane Roe"
    assert speaker("no prefix here") is None and speaker("error: lower case") is None
    assert named_speakers("What did Melanie paint recently?", CHAT) == {"Melanie"}
    assert named_speakers("What did they paint?", CHAT) == frozenset()
    assert named_speakers("what did melanie paint?", CHAT) == frozenset()  # not a name here
    log = ["Error: disk full", "INFO: ok", "Error: retry"]  # a prefix twice is no speaker
    assert named_speakers("Which Error did the job raise?", log) == frozenset()


def test_the_named_speakers_line_outranks_a_line_only_addressing_them() -> None:
    q = "What did Melanie paint?"
    pool = [Found(Passage(f"e{i}", i * 10, 0, t), "m", 0.8) for i, t in enumerate(CHAT)]
    plain = score_semantic(pool, query_terms(q), analyze_query(q), {})
    lifted = score_semantic(pool, query_terms(q), analyze_query(q), {}, question=q)
    by_plain = {sc.line.event_id: score for score, sc in plain}
    by_lifted = {sc.line.event_id: score for score, sc in lifted}
    for eid in ("e0", "e2", "e4"):  # Melanie's own lines
        assert round(by_lifted[eid] - by_plain[eid], 6) == SPEAKER_BOOST
    for eid in ("e1", "e3", "e5"):  # Caroline's, even the one addressing Melanie
        assert by_lifted[eid] == by_plain[eid]
