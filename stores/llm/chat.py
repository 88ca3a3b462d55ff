"""The chat port: one JSON object from any OpenAI-compatible chat completions server.

Works with the OpenAI API, vLLM and Ollama (``base_url`` ending in ``/v1``). JSON is
asked for with ``response_format={"type": "json_object"}``; a server that rejects
that parameter (HTTP 400) is asked again without it, and the client remembers. The
answer is parsed leniently (a ```json fence or prose around the object is tolerated)
and, when a JSON schema is given, validated. Connection errors, timeouts, 429 and 5xx
are retried with exponential backoff (``sleep`` is injectable); everything else
raises :class:`LLMError` at once. Generic: the observer and a query classifier or
extractor can share it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator

if TYPE_CHECKING:
    import openai

Message = Mapping[str, str]


class LLMError(RuntimeError):
    """A chat call failed for good. ``kind``: transport | http | invalid_json | schema."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class ChatClient:
    """``complete_json(messages, schema_name)`` against ``POST {base_url}/chat/completions``."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        *,
        timeout_seconds: float = 60.0,
        max_retries: int = 3,
        backoff_seconds: float = 0.5,
        temperature: float = 0.0,
        max_tokens: int | None = 1024,
        json_mode: bool = True,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Nothing connects here; the HTTP client is built on first use."""
        self.base_url = base_url
        self.model = model
        self._api_key = api_key
        self._timeout = timeout_seconds
        self._max_retries = max_retries
        self._backoff = backoff_seconds
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._json_mode = json_mode
        self._sleep = sleep
        self._client: openai.OpenAI | None = None
        self._lock = threading.Lock()
        self.retries = 0  # transient failures retried, over the client's life

    @property
    def json_mode(self) -> bool:
        """Whether requests still carry ``response_format`` (off once the server refused)."""
        return self._json_mode

    def complete_json(
        self, messages: Sequence[Message], schema_name: str,
        schema: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The model's answer as a JSON object, validated against ``schema`` when given."""
        text = self._complete(list(messages), schema_name)
        data = parse_json_object(text, f"{self._where()} ({schema_name})")
        if schema is not None:
            check_schema(data, schema, schema_name)
        return data

    # ------------------------------------------------------------------ transport
    def _get_client(self) -> openai.OpenAI:
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    base_url=self.base_url, api_key=self._api_key, timeout=self._timeout,
                    max_retries=0,  # retries are ours: counted, bounded, injectable sleep
                )
            return self._client

    def _complete(self, messages: list[Message], schema_name: str) -> str:
        import openai

        transient = (openai.APIConnectionError, openai.RateLimitError,
                     openai.InternalServerError)
        for attempt in range(self._max_retries + 1):
            try:
                return self._request_with_format_fallback(messages)
            except transient as exc:
                if attempt == self._max_retries:
                    raise LLMError("transport", f"{self._where()} ({schema_name}): gave up "
                                   f"after {attempt + 1} attempts: {_describe(exc)}") from exc
                self.retries += 1
                self._sleep(self._backoff * (2**attempt))
            except openai.APIError as exc:
                raise LLMError("http", f"{self._where()} ({schema_name}): "
                               f"{_describe(exc)}") from exc
        raise AssertionError("unreachable")

    def _request_with_format_fallback(self, messages: list[Message]) -> str:
        import openai

        if not self._json_mode:
            return self._request(messages, json_mode=False)
        try:
            return self._request(messages, json_mode=True)
        except openai.BadRequestError:
            text = self._request(messages, json_mode=False)  # raises the real 400 if any
            self._json_mode = False  # the server refuses response_format: stop sending it
            return text

    def _request(self, messages: list[Message], json_mode: bool) -> str:
        extra: dict[str, Any] = {}
        if json_mode:
            extra["response_format"] = {"type": "json_object"}
        if self._max_tokens is not None:
            extra["max_tokens"] = self._max_tokens
        response = self._get_client().chat.completions.create(
            model=self.model, messages=messages,  # type: ignore[arg-type]
            temperature=self._temperature, **extra,
        )
        if not response.choices or response.choices[0].message.content is None:
            raise LLMError("invalid_json", f"{self._where()}: the answer has no content")
        return str(response.choices[0].message.content)

    def _where(self) -> str:
        return f"{self.base_url} model {self.model!r}"


def parse_json_object(text: str, where: str) -> dict[str, Any]:
    """The JSON object in ``text``: bare, in a ```json fence, or amid prose."""
    candidate = text.strip()
    if candidate.startswith("```"):
        candidate = candidate.split("\n", 1)[-1].rsplit("```", 1)[0].strip()
    try:
        data = json.loads(candidate)
    except json.JSONDecodeError:
        start, end = candidate.find("{"), candidate.rfind("}")
        try:
            data = json.loads(candidate[start : end + 1]) if 0 <= start < end else None
        except json.JSONDecodeError:
            data = None
        if data is None:
            raise LLMError("invalid_json", f"{where}: answer is not JSON: "
                           f"{_preview(text)}") from None
    if not isinstance(data, dict):
        raise LLMError("invalid_json", f"{where}: expected a JSON object, got "
                       f"{type(data).__name__}: {_preview(text)}")
    return data


def check_schema(data: Any, schema: Mapping[str, Any], schema_name: str) -> None:
    """Raise ``LLMError("schema", ...)`` naming every path that breaks ``schema``."""
    errors = sorted(Draft202012Validator(dict(schema)).iter_errors(data),
                    key=lambda e: list(e.absolute_path))
    if errors:
        problems = "; ".join(
            f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
            for e in errors[:10]
        )
        raise LLMError("schema", f"answer does not match {schema_name}: {problems}")


def _describe(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "") + f": {exc}"


def _preview(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "…")
