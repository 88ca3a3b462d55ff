"""A coroutine run on an event loop thread, waited for by a synchronous caller.

The gateway, the SDK, the sync publisher and the status and vector producers each keep an
aiokafka client on a loop thread of their own. A caller that stops waiting (its timeout)
cancels the coroutine too: left running, a client it was starting would start after the
caller gave up and never be stopped — aiokafka reports such a producer ("Unclosed
AIOKafkaProducer") wherever it is collected, and an event sent after the caller was told it
failed is sent twice when the caller retries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_on(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T],
           timeout: float | None) -> T:
    """``coro``'s result, run on ``loop`` (another thread's); cancelled when the wait ends
    first (a timeout, an interrupt), so what it started is stopped by its own cleanup."""
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return future.result(timeout)
    except BaseException:
        future.cancel()  # a no-op once it finished (its own error is what is raised)
        raise
