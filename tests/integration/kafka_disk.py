"""What a topic leaves on the broker's disk (issue 26 log rewrite tests).

The broker's data folder is asked of the broker itself (its ``log.dirs`` config through
DescribeConfigs: infra/kafka.sh writes it as ``$BREADCRUMB_INFRA_DIR/kafka/data``), so the
test reads the files the broker really writes. A broker whose folder is not on this
machine fails the test with a message: a byte check that reads nothing proves nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType


async def read_to_end(consumer: AIOKafkaConsumer, tps: Sequence[Any]) -> list[Any]:
    """Every record of the assigned ``tps`` from the consumer's positions up to the end
    offsets as they are now (``ConsumerRecord`` objects, partition by partition)."""
    end = await consumer.end_offsets(tps)
    out: list[Any] = []
    while [tp for tp in tps if await consumer.position(tp) < end[tp]]:
        for recs in (await consumer.getmany(*tps, timeout_ms=1000)).values():
            out += recs
    return out


_NAMES = ("log.dirs", "log.retention.check.interval.ms", "log.segment.delete.delay.ms")


async def _broker_configs(bootstrap: str) -> dict[str, str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        node = (await admin.describe_cluster())["brokers"][0]["node_id"]
        answer = await admin.describe_configs([ConfigResource(
            ConfigResourceType.BROKER, str(node), dict.fromkeys(_NAMES))])
    finally:
        await admin.close()
    return {e[0]: e[1] for r in answer for res in r.resources for e in res[4]}


def broker_configs(bootstrap: str) -> dict[str, str]:
    """The broker's ``log.dirs`` and retention timings."""
    return asyncio.run(_broker_configs(bootstrap))


def topic_dirs(bootstrap: str, topic: str) -> list[Path]:
    """The broker's partition folders of ``topic`` (fails when none is on this machine)."""
    dirs = [Path(d) for d in broker_configs(bootstrap)["log.dirs"].split(",")]
    found = [p for d in dirs if d.is_dir() for p in d.glob(f"{topic}-*") if p.is_dir()]
    if not found:
        raise AssertionError(f"the broker's log.dirs {[str(d) for d in dirs]} hold no folder "
                             f"of topic {topic} on this machine: the on-disk check needs "
                             "the broker's data folder local (infra/services.sh up)")
    return found


def holders(bootstrap: str, topic: str, needle: bytes) -> list[str]:
    """Files (every segment, index, ``.deleted`` file) of ``topic`` holding ``needle``."""
    return [str(f) for d in topic_dirs(bootstrap, topic) for f in sorted(d.iterdir())
            if f.is_file() and needle in f.read_bytes()]


def wait_removed(bootstrap: str, topic: str, needle: bytes, delete_delay_ms: int) -> float:
    """Wait for the broker's retention check to delete the files holding ``needle``
    (bounded by ``log.retention.check.interval.ms`` + the topic's delete delay + 30 s);
    the seconds it took."""
    interval = int(broker_configs(bootstrap)["log.retention.check.interval.ms"])
    t0 = time.monotonic()
    deadline = t0 + (interval + delete_delay_ms) / 1000 + 30
    while holders(bootstrap, topic, needle):
        if time.monotonic() > deadline:
            raise AssertionError(f"{needle!r} still on disk after {deadline - t0:.0f} s: "
                                 f"{holders(bootstrap, topic, needle)}")
        time.sleep(2)
    return time.monotonic() - t0
