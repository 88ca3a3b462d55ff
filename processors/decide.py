"""Decide: does a question need the verbatim source, or is a summary enough?"""

from __future__ import annotations

import re
from dataclasses import dataclass

SUMMARY_OK = "summary_ok"
EXACT = "exact_value_needed"
AMBIGUOUS = "ambiguous"

_EXACT_EN = re.compile(
    r"\b(regex|regexp|regular expression|sql|query string|path|port|env(ironment)? var"
    r"|endpoint|url|config(uration)? value|function name|exact(ly)?|verbatim|command"
    r"|error message|stack ?trace|version|image tag|cron|schema|column|table name|snippet"
    r"|code|literal|value of|what was the|show me the|copy of|failing (line|test))\b",
    re.IGNORECASE,
)
_EXACT_JA = re.compile(
    r"(正規表現|正確|もう一回出して|もう一度出して|そのまま|原文|全文|パス|ポート|環境変数"
    r"|エンドポイント|設定値|関数名|コマンド|エラー(メッセージ|文)?|バージョン|コード|値を|SQL|クエリ)"
)
_SUMMARY_EN = re.compile(
    r"\b(summar(y|ise|ize)|overview|what did we (decide|do|discuss)|why did we|roughly"
    r"|in short|gist|status of|how did .* go|did we)\b",
    re.IGNORECASE,
)
_SUMMARY_JA = re.compile(r"(概要|要約|まとめ|何を決め|なぜ|どうなった|ざっくり|経緯)")
_LITERAL = re.compile(
    r"`[^`]+`|\b[A-Z][A-Z0-9]*(_[A-Z0-9]+)+\b|[\w.-]+/[\w./-]+|\b\w+\.(ts|py|js|sql|yml|yaml|json|toml)\b"
)


@dataclass(frozen=True, slots=True)
class Decision:
    """The classification and the rule that produced it (shown to people)."""

    classification: str
    reason: str


def decide(query: str, mode: str = "auto") -> Decision:
    """Classify a query; ``mode`` summary / source overrides the rules."""
    if mode == "summary":
        return Decision(SUMMARY_OK, "mode=summary requested")
    if mode == "source":
        return Decision(EXACT, "mode=source requested")
    for name, pattern in (("en", _EXACT_EN), ("ja", _EXACT_JA)):
        match = pattern.search(query)
        if match:
            return Decision(EXACT, f"asks for an exact value ({name}: {match.group(0)!r})")
    literal = _LITERAL.search(query)
    if literal:
        return Decision(EXACT, f"names a literal ({literal.group(0)!r})")
    for name, pattern in (("en", _SUMMARY_EN), ("ja", _SUMMARY_JA)):
        match = pattern.search(query)
        if match:
            return Decision(SUMMARY_OK, f"asks for the gist ({name}: {match.group(0)!r})")
    return Decision(AMBIGUOUS, "no rule matched; recalling the source conservatively")
