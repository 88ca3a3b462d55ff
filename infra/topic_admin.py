"""Kafka topic administration: the only module that talks to the Kafka admin API.

``topics.names`` declares what the topics are; :class:`TopicAdmin` makes the cluster
match (creates missing topics with their partitions and configs, leaves existing ones).

    python -m infra.topic_admin [--bootstrap 127.0.0.1:9092] [--prefix ""] [--partitions 3]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError, for_code

from breadcrumb.topics.names import TopicSpec, topic_specs

_NO_ERROR = 0


class TopicAdminError(RuntimeError):
    """The cluster refused or did not finish a topic operation; names the topic and why."""


@dataclass(frozen=True, slots=True)
class TopicState:
    """What the cluster says a topic is: its partition count and its effective configs."""

    name: str
    partitions: int
    configs: dict[str, str]


class TopicAdmin:
    """Declares, describes and deletes topics through aiokafka's ``AIOKafkaAdminClient``.

    Use as ``async with TopicAdmin("127.0.0.1:9092") as admin: await admin.declare(specs)``.
    """

    def __init__(
        self,
        bootstrap: str,
        *,
        replication: int = 1,
        request_timeout_ms: int = 30_000,
        client_id: str = "breadcrumb-topic-admin",
        security: dict[str, Any] | None = None,
    ) -> None:
        self._replication = replication
        self._client = AIOKafkaAdminClient(
            bootstrap_servers=bootstrap,
            **(security or {}),  # topics/kafka_security.aiokafka_kwargs
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
        )

    async def start(self) -> None:
        """Connect to the cluster (fails when no broker answers)."""
        await self._client.start()

    async def close(self) -> None:
        """Close the admin connection."""
        await self._client.close()

    async def __aenter__(self) -> TopicAdmin:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def probe(self) -> int:
        """Number of brokers the cluster reports; raises when the cluster does not answer."""
        cluster = await self._client.describe_cluster()
        return len(cluster["brokers"])

    async def declare(self, specs: list[TopicSpec], timeout_s: float = 30.0) -> list[str]:
        """Create the topics in ``specs`` that do not exist yet; return the names created.

        Existing topics are left as they are (their partitions and configs are not altered).
        Returns once every declared topic has a leader for each partition.
        """
        existing = set(await self._client.list_topics())
        missing = [s for s in specs if s.name not in existing]
        if missing:
            response = await self._client.create_topics([self._new_topic(s) for s in missing])
            _raise_topic_errors(response.topic_errors, "create", ignore=TopicAlreadyExistsError)
        await self._wait_for_leaders([s.name for s in specs], timeout_s)
        return [s.name for s in missing]

    async def delete(self, names: Iterable[str], timeout_s: float = 30.0) -> None:
        """Delete topics by name; names that do not exist are ignored (for test cleanup).

        Returns once the broker's metadata no longer lists them: the controller accepts a
        deletion before the broker forgets the topic, so a describe right after an
        unawaited delete could still find it.
        """
        names = list(names)
        if not names:
            return
        response = await self._client.delete_topics(names)
        _raise_topic_errors(
            response.topic_error_codes, "delete", ignore=UnknownTopicOrPartitionError
        )
        await self._wait_until_gone(names, timeout_s)

    async def _wait_until_gone(self, names: list[str], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            metadata = await self._client.describe_topics(names)
            present = {t["topic"] for t in metadata if t["error_code"] == _NO_ERROR}
            if not present:
                return
            if time.monotonic() > deadline:
                raise TopicAdminError(f"topics still listed {timeout_s}s after delete: "
                                      f"{sorted(present)}")
            await asyncio.sleep(0.1)

    async def describe(self, names: Iterable[str]) -> dict[str, TopicState]:
        """Partition count and configs of each named topic, as the cluster reports them."""
        names = list(names)
        metadata = await self._client.describe_topics(names)
        partitions = {}
        for topic in metadata:
            _check_code(topic["error_code"], topic["topic"], "describe")
            partitions[topic["topic"]] = len(topic["partitions"])
        configs = await self._configs(names)
        return {n: TopicState(n, partitions[n], configs[n]) for n in names}

    def _new_topic(self, spec: TopicSpec) -> NewTopic:
        return NewTopic(
            name=spec.name,
            num_partitions=spec.partitions,
            replication_factor=self._replication,
            topic_configs=spec.kafka_configs(),
        )

    async def _configs(self, names: list[str]) -> dict[str, dict[str, str]]:
        resources = [ConfigResource(ConfigResourceType.TOPIC, n) for n in names]
        responses = await self._client.describe_configs(resources)
        found: dict[str, dict[str, str]] = {}
        for response in responses:
            for resource in response.to_object()["resources"]:
                _check_code(resource["error_code"], resource["resource_name"], "describe configs")
                found[resource["resource_name"]] = _config_values(resource["config_entries"])
        return found

    async def _wait_for_leaders(self, names: list[str], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            pending = _topics_without_leaders(await self._client.describe_topics(names), names)
            if not pending:
                return
            if time.monotonic() > deadline:
                raise TopicAdminError(f"topics without partition leaders after {timeout_s}s: "
                                      f"{sorted(pending)}")
            await asyncio.sleep(0.1)


def _config_values(entries: list[dict[str, Any]]) -> dict[str, str]:
    return {e["config_names"]: e["config_value"] for e in entries if e["config_value"] is not None}


def _topics_without_leaders(metadata: list[dict[str, Any]], names: list[str]) -> set[str]:
    ready = {
        t["topic"]
        for t in metadata
        if t["error_code"] == _NO_ERROR
        and t["partitions"]
        and all(p["leader"] >= 0 for p in t["partitions"])
    }
    return set(names) - ready


def _check_code(code: int, topic: str, action: str, message: str | None = None) -> None:
    if code != _NO_ERROR:
        error = for_code(code)
        raise TopicAdminError(f"{action} topic {topic!r} failed: {error.__name__}"
                              f"{': ' + message if message else ''}")


def _raise_topic_errors(errors: list[tuple[Any, ...]], action: str, ignore: type) -> None:
    """Raise for the first per-topic error code in a response that is not ``ignore``."""
    for topic, code, *rest in errors:
        if code != _NO_ERROR and for_code(code) is not ignore:
            _check_code(code, topic, action, rest[0] if rest else None)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m infra.topic_admin", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--prefix", default="")
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--replication", type=int, default=1)
    parser.add_argument("--probe", action="store_true",
                        help="only check that the cluster answers; declare nothing")
    return parser.parse_args(argv)


async def _run(args: argparse.Namespace) -> str:
    async with TopicAdmin(args.bootstrap, replication=args.replication,
                          request_timeout_ms=5_000) as admin:
        if args.probe:
            return f"kafka at {args.bootstrap}: {await admin.probe()} broker(s)"
        specs = topic_specs(args.prefix, args.partitions)
        created = await admin.declare(specs)
        kept = [s.name for s in specs if s.name not in created]
        return f"topics created: {created or 'none'}; already present: {kept or 'none'}"


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: declare Breadcrumb's topics (or ``--probe`` the cluster)."""
    args = _parse_args(argv)
    sys.stdout.write(asyncio.run(_run(args)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
