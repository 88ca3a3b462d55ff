"""Decide: does a question need the verbatim source, or is a summary enough?

Rules in English and Japanese; an optional LLM classifier (any callable that answers
``{"classification": ..., "reason": ...}``) is consulted only when no rule matched.
:func:`decide_stage` is the pipeline's Decide step, on the analysed question
(:class:`~.question.Query`): a classifier that fails is counted and the source is
recalled (never a guess).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from breadcrumb.query_api.recall.question import Query, named_literal
from breadcrumb.query_api.recall.stages import Decision

log = logging.getLogger(__name__)

SUMMARY_OK = "summary_ok"
EXACT = "exact_value_needed"
AMBIGUOUS = "ambiguous"
CLASSIFICATIONS = (SUMMARY_OK, EXACT, AMBIGUOUS)

_EXACT_EN = re.compile(
    r"\b(regex(es)?|regexp|regular expression|sql|query string|path|port|env(ironment)? var\w*"
    r"|endpoint|url|config(uration)? value|function name|exact(ly)?|verbatim|command"
    r"|error message|stack ?trace|version|image( tag)?|tag|cron|schema|column|table name"
    r"|snippet|code|literal|value of|show me the|copy of|failing (line|test)|id|arxiv|quote"
    # what a session ran with: its settings notes quote them (importers)
    r"|model|provider|(git )?branch|working directory|cwd"
    r"|set to|which \w+|what \w+ (is|was|does|did)( \w+)? (set|use|run|add|hit|store)\w*"
    r"|(the )?name of|(error|exception)s? (message|text|string|line|code)"
    r"|(what|which)\b[^,?;]{0,60}\b(errors?|exceptions?|traceback)"
    r"|what( [\w-]+){1,3} did (we|you|they|i)"
    r" (decide|choose|chose|pick|agree|settle|set|use|go)\w*)\b",
    re.IGNORECASE,
)
_EXACT_JA = re.compile(
    r"(正規表現|正確|もう一回出して|もう一度|そのまま|原文|全文|パス|ポート|環境変数"
    r"|エンドポイント|設定値|関数名|コマンド|エラー(メッセージ|文)?|バージョン|コード|値を|値は"
    r"|SQL|クエリ|イメージ|タグ|カラム|ID|いくつ|どれ|何を使|cron|式は|ドメイン|何に(し|変え|なっ)た"
    r"|モデル|プロバイダ|ブランチ|作業ディレクトリ)"
)
_SUMMARY_EN = re.compile(
    r"\b(summar(y|ise|ize)|overview|what did we (decide|do|discuss)"
    r"|why did we|roughly|in short|gist|status of|how did .* go|what happened)\b",
    re.IGNORECASE,
)
_SUMMARY_JA = re.compile(r"(概要|要約|まとめ|何を決め|なぜ|どうなった|ざっくり|経緯|状況|進捗)")
#: Why / whether / when / by whom something was decided, or what was rejected: a summary
#: answers these even when they name an identifier or a value kind ("why did DB_PORT
#: change?"), unless another part of the question asks for a value.
_WHY_EN = re.compile(
    r"\b(why|how come|reasons?|rationale|motivation|whether|by whom"
    r"|what (made|led) (us|you|them)|reject\w*|rul(e|ed|ing) out|turn(ed)? down|decided against"
    # "when did we decide / switch": a decision; "when did Maria adopt Shadow?" is an event
    # whose date is in the source (left to the other rules)
    r"|when (\w+ ){0,3}(decid|agree|chose|choose|pick|switch|settl|approv)\w*"
    r"|who (\w+ ){0,3}(decid|agree|chose|choose|pick|switch|approv|ask|request|propos|suggest"
    r"|want|insist)\w*)\b"
    r"|^\s*(did|do|does|was|were|is|are|has|have|had|can|could)\b[^?]*\b(ever|allowed|permitted"
    r"|forbidden|banned|approved|accepted)\b",
    re.IGNORECASE,
)
_WHY_JA = re.compile(
    r"(なぜ|どうして|なんで|理由|根拠|経緯|却下|不採用|見送|採用しなかった|やめた(の|理由)|ボツ"
    r"|のは(誰|だれ)|(誰|だれ)が|かどうか|(こと|事)(は|が|も)?(ある|あった|あります|ありました)"
    r"|(許|認め)(さ|ら)れ(て|た|る)|いつ[^、。？?]*(決|変|導入|採用|切り替|移行|追加|やめ)"
    r"|(決|変|導入|採用|切り替|移行|追加|やめ)[^、。？?]*いつ)"
)
#: ... "what is X now", "今の X は": the newest exact value.
_NOW_VALUE = re.compile(
    r"(?i)\b(what|which)('s|\s+(is|are))\b[^,?;]*\b(now|currently|these days|at the moment)\b"
    r"|\b(what|which)('s|\s+(is|are))\s+(the\s+)?(current|latest|newest)\b"
    r"|\b(current|new) value\b|(今|現在|最新)の[^、。？?]*?(は|を教えて)|今は(何|いくつ|どれ)"
)
_EXACT_WORD = re.compile(r"(?i)\bexact(ly)?\b|verbatim|\bquote\b|正確|そのまま|原文|もう一回出して")
#: "which test file checks …", "what command starts …", "どのテストファイルが…": the question
#: word asks for a file, a test, a command … — a verbatim value (a ``PASS tests/x.test.ts``
#: line, a path, a command line) — and what follows the head's verb says what that file or
#: command is about: its "whether", "rejected" or "summary" asks for no gist
#: ("which test file checks whether a sixth login is rejected?").
_HEAD_NOUNS_EN = (r"(?:test|spec)\s+(?:files?|cases?|suites?)|tests?|specs?|files?|commands?"
                  r"|scripts?|paths?|modules?|functions?|methods?|class(?:es)?|folders?"
                  r"|director(?:y|ies)|endpoints?|routes?|migrations?|branch(?:es)?|flags?")
_NOT_MODIFIER = (r"(?:did|does|do|is|are|was|were|has|have|had|should|can|could|will|would"
                 r"|we|i|you|they|it|in|of|for|on|at|to|from|with|about|by|the|a|an"
                 r"|happened|made|led)")
_VALUE_HEAD_EN = re.compile(
    rf"(?i)\b(?:which|what)\s+(?:(?!{_NOT_MODIFIER}\b)[\w.@/-]+\s+){{0,3}}?"
    rf"(?:{_HEAD_NOUNS_EN})\b"
    r"(?:\s+(?:did|does|do|is|are|was|were|has|have|had|should|will|would|can|could)"
    r"(?:\s+(?:we|i|you|they|it|he|she))?)?\s+(?P<verb>[\w-]+)"
)
#: a head whose own verb rejects or rules out ("which file did we reject and why?") is the
#: why / rejected question it reads as
_WHY_VERB = re.compile(r"(?i)^(reject|rul|turn|decid|drop|abandon|refus|declin)")
_HEAD_NOUNS_JA = (r"テストファイル|テストケース|テスト|スペック|ファイル|コマンド|スクリプト|パス"
                  r"|モジュール|関数|クラス|メソッド|フォルダ|ディレクトリ|エンドポイント"
                  r"|マイグレーション|ブランチ|フラグ")
_VALUE_HEAD_JA = re.compile(
    rf"どの[^、。？?]{{0,16}}?(?:{_HEAD_NOUNS_JA})|(?:{_HEAD_NOUNS_JA})(?:名)?(?:は|って)"
    r"(?:どれ|何|なに|どこ)"
)
#: ... unless the Japanese clause ends by asking the reason ("どのファイルを変えた理由は？")
_JA_WHY_END = re.compile(r"(理由|経緯|根拠|わけ|いきさつ)(は|を(教えて|説明して)?|って)?\s*$")
_CLAUSES = re.compile(r"[,;?？。、!！]|\s(?:and|but|also|then)\s|それと|あと、|また、")


#: An optional classifier: query -> {"classification": ..., "reason": ...} (an LLM port).
Classifier = Callable[[str], Mapping[str, Any]]


def decide(query: str, mode: str = "auto", classifier: Classifier | None = None) -> Decision:
    """Classify a query; ``mode`` summary / source overrides the rules.

    Rules first; when none matched and a ``classifier`` is given, its answer is used
    (an invalid answer raises ``ValueError``: it is counted by the caller, never
    guessed); otherwise the query is ``ambiguous`` and recalls conservatively.
    """
    if mode == "summary":
        return Decision(SUMMARY_OK, "mode=summary requested")
    if mode == "source":
        return Decision(EXACT, "mode=source requested")
    ruled = decide_by_rules(query)
    if ruled is not None or classifier is None:
        return ruled or Decision(AMBIGUOUS, "no rule matched; recalling the source conservatively")
    return _classified(classifier(query))


def decide_by_rules(query: str) -> Decision | None:
    """The rule-based classification, or ``None`` when no rule matched."""
    why = _why_decision(query)
    if why is not None:
        return why
    asked = _outside_value_heads(query)
    for name, pattern in (("en", _SUMMARY_EN), ("ja", _SUMMARY_JA)):
        summary = pattern.search(asked)
        if summary and named_literal(query, "decide") is None and not _asks_exact_word(query):
            return Decision(SUMMARY_OK, f"asks for the gist ({name}: {summary.group(0)!r})")
    for name, pattern in (("en", _EXACT_EN), ("ja", _EXACT_JA)):
        match = pattern.search(query)
        if match:
            return Decision(EXACT, f"asks for an exact value ({name}: {match.group(0)!r})")
    head = _value_head(query)
    if head is not None:
        return Decision(EXACT, f"asks which file / test / command ({head!r})")
    now = _NOW_VALUE.search(query)
    if now:
        return Decision(EXACT, f"asks for the newest value ({now.group(0)!r})")
    literal = named_literal(query, "decide")
    if literal:
        return Decision(EXACT, f"names a literal ({literal.group(0)!r})")
    return None


def _why_decision(query: str) -> Decision | None:
    """Why / whether / when / who / rejected questions: the gist unless a value is asked.

    The question is cut into clauses; a value word inside the why-clause is its topic
    ("why did the *regex* change?"), a value ask in another clause ("…, and which port
    now?"), a "now" value ask or an exact/verbatim word anywhere makes it exact."""
    clauses = [c for c in _CLAUSES.split(query) if c and c.strip()]
    why_clauses = [c for c in clauses if _why_cue(_outside_value_heads(c))]
    if not why_clauses:
        return None
    if _asks_exact_word(query):
        return None  # "quote why we…", "理由を原文で": the ordinary rules decide
    now = _NOW_VALUE.search(query)
    if now:
        return Decision(EXACT, f"asks why and for the newest value ({now.group(0)!r})")
    for clause in clauses:
        if clause in why_clauses:
            continue
        for name, pattern in (("en", _EXACT_EN), ("ja", _EXACT_JA)):
            match = pattern.search(clause)
            if match:
                return Decision(EXACT, f"asks why and for a value ({name}: {match.group(0)!r})")
        head = _value_head(clause)
        if head is not None:
            return Decision(EXACT, f"asks why and which file / test / command ({head!r})")
    cue = _why_cue(_outside_value_heads(why_clauses[0]))
    assert cue is not None
    return Decision(SUMMARY_OK, f"asks why / whether / when / who ({cue.group(0).strip()!r})")


def _why_cue(text: str) -> re.Match[str] | None:
    return _WHY_EN.search(text) or _WHY_JA.search(text)


def _value_head(text: str) -> str | None:
    """The words of a "which test file checks …" / "どのファイル…" ask, if any (see
    ``_VALUE_HEAD_EN``): not when the head's own verb rejects, nor when a Japanese
    question ends by asking the reason."""
    for head in _VALUE_HEAD_EN.finditer(text):
        if not _WHY_VERB.match(head.group("verb")):
            return head.group(0)
    head_ja = _VALUE_HEAD_JA.search(text)
    if head_ja is not None and not _JA_WHY_END.search(text.rstrip("？?。 ")):
        return head_ja.group(0)
    return None


def _outside_value_heads(text: str) -> str:
    """``text`` cut at each clause's value head (:func:`_value_head`): in English the
    words after the head's verb, in Japanese the words of its clause, say what the file
    or test is about, so their why / whether / gist words ask for nothing."""
    kept: list[str] = []
    for clause in re.split(f"({_CLAUSES.pattern})", text):
        head = _value_head(clause)
        if head is None:
            kept.append(clause)
        elif _VALUE_HEAD_EN.search(clause):
            kept.append(clause[: clause.find(head) + len(head)])
        else:
            kept.append(" ")
    return "".join(kept)


def _asks_exact_word(query: str) -> bool:
    return bool(_EXACT_WORD.search(query))


def _classified(answer: Mapping[str, Any]) -> Decision:
    label = answer.get("classification")
    if label not in CLASSIFICATIONS:
        raise ValueError(f"classifier answered {label!r}, expected one of {CLASSIFICATIONS}")
    return Decision(str(label), f"classifier: {answer.get('reason') or 'no reason given'}")


def decide_stage(query: Query, mode: str, classifier: Classifier | None,
                 errors: Counter[str]) -> Decision:
    """Stage 3: :func:`decide` of the analysed question; a classifier failure is counted
    in ``errors`` and the question recalls its source (``ambiguous``)."""
    try:
        return decide(query.text, mode, classifier)
    except Exception as exc:  # an LLM port failed: count it, recall conservatively
        errors["classifier"] += 1
        log.warning("query classifier failed (%s); recalling the source", exc)
        return Decision(AMBIGUOUS, f"classifier failed ({exc}); recalling the source")
