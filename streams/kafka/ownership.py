"""Which thread keys this Faust worker consumes (for idle flushes with several workers).

A thread key's partition is the one the producers pick: the Kafka default partitioner
(murmur2 of the key), as aiokafka, the SDK and the gateway use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiokafka.partitioner import murmur2


def key_partition(key: str, partitions: int) -> int:
    """The partition the default partitioner sends ``key`` to."""
    return (murmur2(key.encode("utf-8")) & 0x7FFFFFFF) % partitions


def assigned_keys(app: Any, topic: str, partitions: int) -> Callable[[str], bool]:
    """``owns(key)``: whether ``key``'s partition of ``topic`` is assigned to ``app``'s
    consumer now (False while no assignment is known, e.g. during a rebalance)."""

    def owns(key: str) -> bool:
        try:
            assignment = app.consumer.assignment()
        except Exception:  # not started / rebalancing: own nothing rather than guess
            return False
        mine = {tp.partition for tp in assignment if tp.topic == topic}
        return key_partition(key, partitions) in mine

    return owns
