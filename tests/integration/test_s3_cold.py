"""Cold storage: S3ColdStore against the real S3 endpoint (infra/s3.sh, 127.0.0.1:9000),
LocalColdStore on tmp_path, and the pure pack/unpack/key helpers.

Only the S3 tests are ``integration``; the rest run anywhere.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from breadcrumb.stores.cold.storage import (
    LocalColdStore,
    S3ColdStore,
    archive_key,
    escape_key_part,
    pack_events,
    unpack_events,
)
from breadcrumb.topics.records import Event

S3_ENDPOINT = os.environ.get("BREADCRUMB_S3_ENDPOINT", "http://127.0.0.1:9000")
S3_ACCESS = os.environ.get("BREADCRUMB_S3_ACCESS_KEY", "breadcrumb")
S3_SECRET = os.environ.get("BREADCRUMB_S3_SECRET_KEY", "breadcrumb-secret")

TRICKY = [
    "plain ascii",
    "日本語のテキスト：認証エラーを修正しました。\n二行目",
    "emoji 🍞🧭 and ZWJ 👩‍💻, combining é vs é",
    "  leading/trailing spaces\ttab\r\nCRLF  ",
    'quotes " \\ backslash \u2028 line sep \x00 nul \x1b esc',
    "",
]


def events(user: str = "u1", thread: str = "t/1") -> list[Event]:
    return [
        Event(
            event_id=f"e{i}", user_id=user, thread_id=thread, ts=f"2025-01-01T00:00:{i:02d}Z",
            role="tool" if i % 2 else "user", kind="tool_result" if i % 2 else "message",
            content=text, project_id="p1" if i % 2 else None, index=i, tokens=len(text),
            tool="bash" if i % 2 else None, attrs={"exit": i, "path": "src/認証.ts"} if i else {},
        )
        for i, text in enumerate(TRICKY)
    ]


# --- pure helpers -----------------------------------------------------------------
def test_pack_round_trips_content_byte_for_byte() -> None:
    original = events()
    restored = unpack_events(pack_events(original))
    assert restored == original
    for a, b in zip(original, restored, strict=True):
        assert a.content.encode("utf-8") == b.content.encode("utf-8")


def test_pack_is_deterministic_and_gzip() -> None:
    data = pack_events(events())
    assert data == pack_events(events())
    assert data[:2] == b"\x1f\x8b"
    assert data[4:8] == b"\x00\x00\x00\x00"  # gzip mtime = 0
    assert pack_events([]) == pack_events([]) and unpack_events(pack_events([])) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(), max_size=5))
def test_pack_round_trips_any_text(contents: list[str]) -> None:
    original = [Event(event_id=f"e{i}", user_id="u", thread_id="t", ts="2025-01-01T00:00:00Z",
                      role="user", kind="message", content=c, index=i)
                for i, c in enumerate(contents)]
    assert unpack_events(pack_events(original)) == original


def test_archive_key_layout_and_escaping() -> None:
    assert archive_key("u1", "t-1", 0, 39) == "archive/u1/t-1/000000000000-000000000039.jsonl.gz"
    key = archive_key("a/b", "..", 5, 5)
    assert key == "archive/a%2Fb/%2E%2E/000000000005-000000000005.jsonl.gz"
    assert escape_key_part("ユーザー 1") == "%E3%83%A6%E3%83%BC%E3%82%B6%E3%83%BC%201"
    with pytest.raises(ValueError):
        archive_key("", "t", 0, 1)
    with pytest.raises(ValueError):
        archive_key("u", "t", 5, 4)


# --- LocalColdStore -----------------------------------------------------------------
def test_local_cold_store_round_trip(tmp_path: Path) -> None:
    store = LocalColdStore(tmp_path / "cold")
    assert store.list_keys("archive/") == []
    key = archive_key("u1", "t/1", 0, 5)
    data = pack_events(events())
    store.put_object(key, data)
    store.put_object(archive_key("u2", "t", 0, 1), b"other")
    assert store.get_object(key) == data
    assert unpack_events(store.get_object(key) or b"") == events()
    assert store.list_keys("archive/u1/") == [key]
    store.put_object(key, b"replaced")
    assert store.get_object(key) == b"replaced"
    assert not list((tmp_path / "cold").rglob(".tmp-*"))
    store.delete_object(key)
    store.delete_object(key)  # absent is fine
    assert store.get_object(key) is None
    assert store.list_keys("archive/") == [archive_key("u2", "t", 0, 1)]


@pytest.mark.parametrize("bad", ["../escape", "/abs/path", "a/./b", "a//b", "dir/", ""])
def test_local_cold_store_rejects_unsafe_keys(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError):
        LocalColdStore(tmp_path).put_object(bad, b"x")


# --- S3ColdStore against the real endpoint --------------------------------------------
@pytest.fixture
def s3_store() -> Iterator[S3ColdStore]:
    bucket = f"bc-test-{uuid.uuid4().hex[:12]}"
    store = S3ColdStore(S3_ENDPOINT, bucket, "us-east-1", S3_ACCESS, S3_SECRET)
    store.ensure()
    yield store
    for key in store.list_keys(""):
        store.delete_object(key)
    store.client.delete_bucket(Bucket=bucket)


@pytest.mark.integration
def test_s3_round_trip_byte_identical(s3_store: S3ColdStore) -> None:
    s3_store.ensure()  # idempotent on an existing bucket
    key = archive_key("ユーザー", "thread 🍞", 0, len(TRICKY) - 1)
    data = pack_events(events(user="ユーザー", thread="thread 🍞"))
    s3_store.put_object(key, data)
    got = s3_store.get_object(key)
    assert got == data
    assert unpack_events(got or b"") == events(user="ユーザー", thread="thread 🍞")
    assert s3_store.list_keys("archive/") == [key]


@pytest.mark.integration
def test_s3_missing_delete_and_listing(s3_store: S3ColdStore) -> None:
    assert s3_store.get_object("archive/nope.jsonl.gz") is None
    keys = [archive_key("u1", "t", i * 10, i * 10 + 9) for i in (2, 0, 1)]
    for key in keys:
        s3_store.put_object(key, key.encode())
    s3_store.put_object(archive_key("u2", "t", 0, 9), b"x")
    assert s3_store.list_keys("archive/u1/") == sorted(keys)
    s3_store.delete_object(keys[0])
    s3_store.delete_object(keys[0])  # absent is fine
    assert s3_store.get_object(keys[0]) is None
    assert len(s3_store.list_keys("archive/")) == 3

