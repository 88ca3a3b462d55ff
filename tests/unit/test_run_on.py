"""topics.loops.run_on: a caller that stops waiting cancels what it waited for, so a client
the coroutine was starting is stopped by the coroutine's own cleanup (``started``)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from breadcrumb.topics.loops import run_on


@pytest.fixture()
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_the_result_comes_back(loop: asyncio.AbstractEventLoop) -> None:
    async def answer() -> int:
        return 42

    assert run_on(loop, answer(), 5) == 42


def test_a_timeout_cancels_the_coroutine_and_its_cleanup_runs(
        loop: asyncio.AbstractEventLoop) -> None:
    cleaned = threading.Event()

    async def slow_start() -> None:
        try:
            await asyncio.sleep(30)  # a start that hangs (a paused broker)
        finally:
            cleaned.set()  # what started() does: stop the client

    with pytest.raises(TimeoutError):
        run_on(loop, slow_start(), 0.05)
    assert cleaned.wait(5), "the coroutine kept running after its caller gave up"


def test_the_coroutines_own_error_goes_on(loop: asyncio.AbstractEventLoop) -> None:
    async def refused() -> None:
        raise ConnectionError("refused")

    with pytest.raises(ConnectionError, match="refused"):
        run_on(loop, refused(), 5)
