"""The real services started by ``infra/services.sh up``: Kafka, MariaDB and S3.

Each test talks to the running service over its real protocol; nothing is mocked.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import boto3
import pymysql
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from breadcrumb.infra.topic_admin import TopicAdmin, TopicAdminError
from breadcrumb.settings import Settings
from breadcrumb.topics.kafka_security import started
from breadcrumb.topics.names import (
    AGENT_EVENTS,
    DEAD_LETTERS,
    MEMORY_STATUS,
    OBSERVATIONS,
    topic_specs,
)

pytestmark = pytest.mark.integration

# Environment-driven (BREADCRUMB_*). Dict-unpacked: without the pydantic mypy plugin,
# mypy takes Field(default, ...) for required arguments.
_CLUSTER: dict[str, Any] = {"mode": "cluster"}
SETTINGS = Settings(**_CLUSTER)
PARTITIONS = 3


@pytest.fixture
async def declared_prefix() -> AsyncIterator[str]:
    """A test-unique topic prefix whose Breadcrumb topics are declared, deleted afterwards."""
    prefix = f"it-{uuid.uuid4().hex[:10]}-"
    specs = topic_specs(prefix, PARTITIONS)
    async with TopicAdmin(SETTINGS.kafka_bootstrap) as admin:
        created = await admin.declare(specs)
        assert sorted(created) == sorted(s.name for s in specs)
        yield prefix
        await admin.delete(s.name for s in specs)


async def test_declared_topics_have_partitions_and_cleanup_policy(declared_prefix: str) -> None:
    names = [declared_prefix + n for n in (AGENT_EVENTS, DEAD_LETTERS, OBSERVATIONS, MEMORY_STATUS)]
    async with TopicAdmin(SETTINGS.kafka_bootstrap) as admin:
        states = await admin.describe(names)
    events, dlq, observations, status = (states[n] for n in names)
    assert (events.partitions, dlq.partitions) == (PARTITIONS, 1)
    assert (observations.partitions, status.partitions) == (PARTITIONS, PARTITIONS)
    assert status.configs["cleanup.policy"] == "compact"
    assert events.configs["cleanup.policy"] == "delete"
    assert events.configs["retention.ms"] == "-1"


async def test_declare_twice_creates_nothing_and_keeps_topics(declared_prefix: str) -> None:
    specs = topic_specs(declared_prefix, PARTITIONS)
    async with TopicAdmin(SETTINGS.kafka_bootstrap) as admin:
        assert await admin.declare(specs) == []
        listed = await admin.describe(s.name for s in specs)
    assert set(listed) == {s.name for s in specs}


async def test_delete_then_describe_reports_the_topic_missing() -> None:
    name = f"it-{uuid.uuid4().hex[:10]}-gone"
    async with TopicAdmin(SETTINGS.kafka_bootstrap) as admin:
        await admin.declare(topic_specs(name + "-", 1)[:1])
        await admin.delete([name + "-" + AGENT_EVENTS])
        await admin.delete([name + "-" + AGENT_EVENTS])  # deleting a missing topic is tolerated
        with pytest.raises(TopicAdminError, match="UnknownTopicOrPartition"):
            await admin.describe([name + "-" + AGENT_EVENTS])


async def test_kafka_keyed_message_round_trip(declared_prefix: str) -> None:
    topic = declared_prefix + AGENT_EVENTS
    key, value = b"user-1/thread-42", "記憶 🍞 breadcrumb".encode()
    producer = await started(AIOKafkaProducer(
        bootstrap_servers=SETTINGS.kafka_bootstrap, acks="all"))
    try:
        first = await producer.send_and_wait(topic, value, key=key)
        second = await producer.send_and_wait(topic, b"second", key=key)
    finally:
        await producer.stop()
    assert first.partition == second.partition  # same key, same partition: per-thread order

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=SETTINGS.kafka_bootstrap,
                                group_id=f"{declared_prefix}group", auto_offset_reset="earliest")
    await consumer.start()
    try:
        batches = await consumer.getmany(timeout_ms=10_000, max_records=10)
        records = [r for batch in batches.values() for r in batch]
    finally:
        await consumer.stop()
    assert [(r.key, r.value, r.partition) for r in records] == [
        (key, value, first.partition), (key, b"second", first.partition)]


@pytest.fixture
def mysql_connection() -> Iterator[pymysql.connections.Connection]:
    """A connection as the breadcrumb user to the breadcrumb_test database."""
    connection = pymysql.connect(
        host=SETTINGS.mysql_host, port=SETTINGS.mysql_port, user=SETTINGS.mysql_user,
        password=SETTINGS.mysql_password.get_secret_value(), database="breadcrumb_test",
        charset="utf8mb4", autocommit=True,
    )
    yield connection
    connection.close()


def test_mariadb_round_trips_utf8mb4(mysql_connection: pymysql.connections.Connection) -> None:
    table = f"it_{uuid.uuid4().hex[:10]}"
    text = "パン屑の記憶を辿る 🍞🧠👣 — 漢字とかなカナ"
    with mysql_connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, body TEXT) "
                       "CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
        try:
            cursor.execute(f"INSERT INTO {table} VALUES (%s, %s)", (1, text))
            cursor.execute(f"SELECT body, CHAR_LENGTH(body) FROM {table} WHERE id = 1")
            row = cursor.fetchone()
        finally:
            cursor.execute(f"DROP TABLE {table}")
    assert row == (text, len(text))


def test_mariadb_breadcrumb_user_can_use_main_database() -> None:
    connection = pymysql.connect(
        host=SETTINGS.mysql_host, port=SETTINGS.mysql_port, user=SETTINGS.mysql_user,
        password=SETTINGS.mysql_password.get_secret_value(), database=SETTINGS.mysql_database,
    )
    with connection, connection.cursor() as cursor:
        cursor.execute("SELECT DATABASE(), @@character_set_database")
        assert cursor.fetchone() == (SETTINGS.mysql_database, "utf8mb4")


def _s3_client() -> Any:
    access = SETTINGS.s3_access_key.get_secret_value() if SETTINGS.s3_access_key else None
    secret = SETTINGS.s3_secret_key.get_secret_value() if SETTINGS.s3_secret_key else None
    return boto3.client(
        "s3",
        endpoint_url=SETTINGS.s3_endpoint or "http://127.0.0.1:9000",
        region_name=SETTINGS.s3_region,
        aws_access_key_id=access or os.environ.get("AWS_ACCESS_KEY_ID", "breadcrumb"),
        aws_secret_access_key=secret or os.environ.get("AWS_SECRET_ACCESS_KEY",
                                                       "breadcrumb-secret"),
    )


def test_s3_put_get_is_byte_identical() -> None:
    s3 = _s3_client()
    key = f"it/{uuid.uuid4().hex}/blob.bin"
    body = bytes(range(256)) * 512 + os.urandom(4096) + "末尾 🍞".encode()
    s3.put_object(Bucket=SETTINGS.s3_bucket, Key=key, Body=body)
    try:
        fetched = s3.get_object(Bucket=SETTINGS.s3_bucket, Key=key)["Body"].read()
        listed = s3.list_objects_v2(Bucket=SETTINGS.s3_bucket, Prefix=key)["Contents"]
    finally:
        s3.delete_object(Bucket=SETTINGS.s3_bucket, Key=key)
    assert fetched == body
    assert [(o["Key"], o["Size"]) for o in listed] == [(key, len(body))]
