"""streams.kafka.log_rewrite.rewrite_topic stops every Kafka client it started when a later one
fails to start (the operator's command must not leave an admin client or a consumer open).

The aiokafka classes are replaced by recording stand-ins: this is a unit test of one
function's start/stop order; tests/integration/test_log_rewrite.py runs it on Kafka."""

from __future__ import annotations

import asyncio
from typing import Any

import aiokafka
import aiokafka.admin
import pytest

from breadcrumb.streams.kafka.log_rewrite import Kafka, rewrite_topic

CALLS: list[str] = []
MADE: list[str] = []


class _Recorder:
    name = ""
    fails = False

    def __init__(self, **_kwargs: Any) -> None:
        MADE.append(self.name)

    async def start(self) -> None:
        CALLS.append(f"{self.name} start")
        if self.fails:
            raise ConnectionError("refused")

    async def stop(self) -> None:
        CALLS.append(f"{self.name} stop")

    async def close(self) -> None:
        CALLS.append(f"{self.name} close")


class _Admin(_Recorder):
    name = "admin"


class _Consumer(_Recorder):
    name = "consumer"


class _FailingProducer(_Recorder):
    name, fails = "producer", True


def _rewrite_refused(monkeypatch: pytest.MonkeyPatch, admin: type[_Recorder],
                     consumer: type[_Recorder], producer: type[_Recorder]) -> None:
    """Run the rewrite with these stand-ins (the calls and makes recorded afresh); one of
    them refuses to start."""
    CALLS.clear()
    MADE.clear()
    monkeypatch.setattr(aiokafka.admin, "AIOKafkaAdminClient", admin)
    monkeypatch.setattr(aiokafka, "AIOKafkaConsumer", consumer)
    monkeypatch.setattr(aiokafka, "AIOKafkaProducer", producer)
    with pytest.raises(ConnectionError, match="refused"):
        asyncio.run(rewrite_topic(Kafka("localhost:1"), "agent-events", lambda records: set()))


def test_a_producer_that_fails_to_start_leaves_nothing_open(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _rewrite_refused(monkeypatch, _Admin, _Consumer, _FailingProducer)
    assert CALLS == ["admin start", "consumer start", "producer start", "producer stop",
                     "consumer stop", "admin close"]


class _FailingAdmin(_Recorder):
    name, fails = "admin", True


class _Producer(_Recorder):
    name = "producer"


def test_no_client_is_made_before_the_one_before_it_started(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # aiokafka reports a producer made and never stopped ("Unclosed AIOKafkaProducer") when
    # it is collected, started or not: the cluster down at the admin's start made two
    _rewrite_refused(monkeypatch, _FailingAdmin, _Consumer, _Producer)
    assert MADE == ["admin"]
    assert CALLS == ["admin start", "admin close"]
