"""topics.kafka_security.started: a Kafka client that fails to start is stopped (aiokafka
logs an "Unclosed AIOKafkaProducer" traceback when it collects one that never was)."""

from __future__ import annotations

import asyncio
import gc
import logging
import socket

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError

from breadcrumb.topics.kafka_security import started


class _Client:
    def __init__(self, fails: bool) -> None:
        self.fails, self.calls = fails, []

    async def start(self) -> None:
        self.calls.append("start")
        if self.fails:
            raise ConnectionError("no broker")

    async def stop(self) -> None:
        self.calls.append("stop")


def test_a_client_that_starts_is_returned_running() -> None:
    client = _Client(fails=False)
    assert asyncio.run(started(client)) is client
    assert client.calls == ["start"]


def test_a_client_that_fails_to_start_is_stopped_and_the_error_goes_on() -> None:
    client = _Client(fails=True)
    with pytest.raises(ConnectionError, match="no broker"):
        asyncio.run(started(client))
    assert client.calls == ["start", "stop"]


def test_a_real_producer_without_a_broker_leaves_no_unclosed_warning(
        caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    mine: list[str] = []

    async def connect() -> str:
        producer = AIOKafkaProducer(bootstrap_servers=f"127.0.0.1:{port}",
                                    request_timeout_ms=1000)
        mine.append(f"object at {id(producer):#x}>")
        try:
            await started(producer)
        except KafkaConnectionError as exc:  # no traceback kept: the producer is let go
            return type(exc).__name__
        return "started"

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        assert asyncio.run(connect()) == "KafkaConnectionError"
        gc.collect()
    # only this producer: the collection also finds what earlier tests of the process left
    logged = [r.getMessage() for r in caplog.records] + [capfd.readouterr().err]
    assert not [m for m in logged if "Unclosed AIOKafkaProducer" in m and mine[0] in m]
