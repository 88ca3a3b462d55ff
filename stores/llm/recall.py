"""LLM adapters for recall: the Decide classifier and the level-3 quoter.

Both go through :class:`stores.llm.chat.ChatClient` (OpenAI-compatible). The quoter may only
*point at* lines: ``RecallService`` keeps a quote only when it occurs verbatim in the
source range, so a model can never write evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from breadcrumb.stores.llm.chat import ChatClient

CLASSIFY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["classification", "reason"],
    "properties": {
        "classification": {"enum": ["summary_ok", "exact_value_needed", "ambiguous"]},
        "reason": {"type": "string", "maxLength": 400},
    },
}
QUOTES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["quotes"],
    "properties": {"quotes": {"type": "array", "maxItems": 20,
                              "items": {"type": "string", "maxLength": 2000}}},
}
_CLASSIFY = (
    "You route questions to an agent's long-term memory. Answer JSON "
    '{"classification": ..., "reason": ...}. classification is "exact_value_needed" when '
    "the answer is a literal (a regex, SQL, path, port, env var, endpoint, config value, "
    'function name, error message, command), "summary_ok" when the gist of a past decision '
    'or discussion answers it, else "ambiguous".'
)
_QUOTE = (
    "You extract evidence. Given a question and source text, answer JSON "
    '{"quotes": [...]} with the few WHOLE LINES of the source that answer the question, '
    "copied exactly, character for character. Never paraphrase, never add text."
)


class LlmClassifier:
    """``query -> {"classification", "reason"}`` (query_api.recall.decide.Classifier)."""

    def __init__(self, chat: ChatClient) -> None:
        self.chat = chat

    def __call__(self, query: str) -> Mapping[str, Any]:
        messages = [{"role": "system", "content": _CLASSIFY},
                    {"role": "user", "content": query}]
        return self.chat.complete_json(messages, "classification", CLASSIFY_SCHEMA)


class LlmQuoter:
    """``(query, source_text) -> quotes`` (query_api.recall.Quoter)."""

    def __init__(self, chat: ChatClient) -> None:
        self.chat = chat

    def __call__(self, query: str, source: str) -> Sequence[str]:
        messages = [{"role": "system", "content": _QUOTE},
                    {"role": "user", "content": f"Question: {query}\n\nSource:\n{source}"}]
        answer = self.chat.complete_json(messages, "quotes", QUOTES_SCHEMA)
        return [str(q) for q in answer["quotes"]]
