"""The LLM observer: a model writes the summary and hints, the deterministic one the rest.

Enabled when ``settings.llm_model`` is set (``infra.bootstrap.build_observer``). For
each closed range it runs the deterministic observer first (ids, range, facts,
metadata, exact-value hints), asks the chat model for summary / tags / query_hints /
retrieve_when / importance / kind, validates the answer and merges it
(:func:`processors.llm_prompt.merge_observation`). Any failure — transport after
retries, HTTP error, invalid JSON, schema mismatch — falls back to the deterministic
observation and is counted; the last error is kept for ``/v1/stats``-style reporting.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from breadcrumb.processors.llm_prompt import (
    SCHEMA_NAME,
    ObservationOutputError,
    PromptConfig,
    build_messages,
    merge_observation,
    validate_output,
)
from breadcrumb.processors.observer import ObserverConfig, observe
from breadcrumb.settings import Settings
from breadcrumb.stores.llm.chat import ChatClient, LLMError, Message
from breadcrumb.topics.records import ClosedRange, Event, Observation

log = logging.getLogger(__name__)


class JsonChat(Protocol):
    """What the observer needs from a chat client (``stores.llm.chat.ChatClient``)."""

    model: str

    def complete_json(
        self, messages: Sequence[Message], schema_name: str, schema: Any = None
    ) -> dict[str, Any]: ...


@dataclass
class ObserverCounters:
    """Calls made, answers merged, fallbacks taken, and the last error text."""

    calls: int = 0
    successes: int = 0
    fallbacks: int = 0
    last_error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "successes": self.successes,
                "fallbacks": self.fallbacks, "last_error": self.last_error}


class LLMObserver:
    """``observer(events, closed) -> Observation``, never raising for a model failure."""

    def __init__(
        self, chat: JsonChat, observer_config: ObserverConfig | None = None,
        prompt_config: PromptConfig | None = None,
    ) -> None:
        self.chat = chat
        self.observer_config = observer_config or ObserverConfig()
        self.prompt_config = prompt_config or PromptConfig()
        self.counters = ObserverCounters()
        self._lock = threading.Lock()

    def __call__(self, events: Sequence[Event], closed: ClosedRange) -> Observation:
        """The merged observation, or the deterministic one when the model fails."""
        base = observe(events, closed, self.observer_config)
        messages = build_messages(events, closed, base.query_hints, self.prompt_config)
        self._count(calls=1)
        try:
            output = validate_output(self.chat.complete_json(messages, SCHEMA_NAME))
        except (LLMError, ObservationOutputError) as exc:
            self._count(fallbacks=1, error=f"{type(exc).__name__}: {exc}")
            log.warning("LLM observer fell back to the deterministic observer for %s: %s",
                        base.id, exc)
            return base
        self._count(successes=1)
        return merge_observation(base, output, events, self.chat.model, self.prompt_config)

    def stats(self) -> dict[str, Any]:
        """The counters as a dict (``calls``, ``successes``, ``fallbacks``, ``last_error``)."""
        with self._lock:
            return self.counters.as_dict()

    @property
    def calls(self) -> int:
        return self.counters.calls

    @property
    def successes(self) -> int:
        return self.counters.successes

    @property
    def fallbacks(self) -> int:
        return self.counters.fallbacks

    @property
    def last_error(self) -> str | None:
        return self.counters.last_error

    def _count(self, calls: int = 0, successes: int = 0, fallbacks: int = 0,
               error: str | None = None) -> None:
        with self._lock:
            self.counters.calls += calls
            self.counters.successes += successes
            self.counters.fallbacks += fallbacks
            if error is not None:
                self.counters.last_error = error


def build_chat_client(settings: Settings) -> ChatClient:
    """The chat client from settings (``llm_base_url``, else ``openai_base_url``)."""
    base_url = settings.llm_base_url or settings.openai_base_url
    if not settings.llm_model or not base_url:
        raise ValueError("the LLM needs BREADCRUMB_LLM_MODEL and BREADCRUMB_LLM_BASE_URL "
                         "(or BREADCRUMB_OPENAI_BASE_URL)")
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else "none"
    return ChatClient(
        base_url, key, settings.llm_model,
        timeout_seconds=settings.llm_timeout_seconds,
        max_retries=settings.llm_max_retries,
        backoff_seconds=settings.llm_backoff_seconds,
        max_tokens=settings.llm_max_output_tokens,
        json_mode=settings.llm_json_mode,
    )


def build_llm_observer(settings: Settings) -> LLMObserver:
    """The observer ``infra.bootstrap.build_observer`` installs when ``llm_model`` is set."""
    return LLMObserver(build_chat_client(settings))
