"""Cold storage for archived source ranges: local files (embedded) or S3 (cluster).

Objects are gzip JSONL of ``Event.to_dict()``, one event per line, under keys

    archive/{user_id}/{thread_id}/{start:012d}-{end:012d}.jsonl.gz

(see :func:`archive_key`). Packing is deterministic (gzip ``mtime=0``, no file name),
so the same events always give the same bytes and re-archiving is idempotent.
"""

from __future__ import annotations

import gzip
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from breadcrumb.topics.records import Event

_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def escape_key_part(value: str) -> str:
    """Percent-encode everything but ``[A-Za-z0-9_-]`` (UTF-8 bytes), so an id can
    contain ``/``, ``.``, spaces or any script without escaping its key segment."""
    if not value:
        raise ValueError("an id used in an object key must not be empty")
    return "".join(
        ch if ch in _SAFE else "".join(f"%{b:02X}" for b in ch.encode("utf-8")) for ch in value
    )


def archive_key(user_id: str, thread_id: str, start: int, end: int) -> str:
    """Key of an archived range: ``archive/{user_id}/{thread_id}/{start:012d}-{end:012d}.jsonl.gz``.

    Ids are escaped with :func:`escape_key_part`; zero-padded indices make keys of one
    thread list in index order.
    """
    if start < 0 or end < start:
        raise ValueError(f"bad archive range {start}..{end}")
    user, thread = escape_key_part(user_id), escape_key_part(thread_id)
    return f"archive/{user}/{thread}/{start:012d}-{end:012d}.jsonl.gz"


def pack_events(events: Sequence[Event]) -> bytes:
    """Gzip JSONL of the events' contract JSON; deterministic bytes for equal input.

    Content must be valid Unicode (no lone surrogates), as the event schema requires;
    anything else raises instead of being altered.
    """
    lines = b"".join(orjson.dumps(e.to_dict()) + b"\n" for e in events)
    return gzip.compress(lines, compresslevel=6, mtime=0)


def unpack_events(data: bytes) -> list[Event]:
    """Inverse of :func:`pack_events`; every field, content included, round-trips exactly."""
    raw = gzip.decompress(data)
    return [Event.from_dict(orjson.loads(line)) for line in raw.splitlines() if line]


class LocalColdStore:
    """Objects as files under ``root``; keys are relative POSIX paths.

    Writes go to a temp file in the target directory, are fsynced, then
    ``os.replace``d into place, so a reader never sees a partial object.
    """

    def __init__(self, root: Path) -> None:
        """``root`` is created on first write."""
        self._root = Path(root)

    def _path(self, key: str) -> Path:
        parts = key.split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"invalid object key {key!r}")
        return self._root.joinpath(*parts)

    def put_object(self, key: str, data: bytes) -> None:
        """Atomically write (or replace) one object."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get_object(self, key: str) -> bytes | None:
        """The object's bytes, or None when absent."""
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return None

    def delete_object(self, key: str) -> None:
        """Remove the object; absent is fine."""
        self._path(key).unlink(missing_ok=True)

    def list_keys(self, prefix: str) -> list[str]:
        """Sorted keys starting with ``prefix`` (temp files excluded)."""
        if not self._root.exists():
            return []
        keys = (
            p.relative_to(self._root).as_posix()
            for p in self._root.rglob("*")
            if p.is_file() and not p.name.startswith(".tmp-")
        )
        return sorted(k for k in keys if k.startswith(prefix))


class S3ColdStore:
    """Objects in one S3 bucket (AWS or any S3-compatible endpoint) via boto3.

    The constructor does not connect; the client is built on first use.
    """

    def __init__(
        self,
        endpoint_url: str | None,
        bucket: str,
        region: str,
        access_key: str | None,
        secret_key: str | None,
    ) -> None:
        """``endpoint_url=None`` means AWS; keys ``None`` use boto3's credential chain."""
        self._endpoint = endpoint_url
        self.bucket = bucket
        self._region = region
        self._access_key = access_key
        self._secret_key = secret_key
        self._client: Any = None  # botocore client (no stubs installed)
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The lazily built boto3 S3 client."""
        with self._lock:
            if self._client is None:
                import boto3

                self._client = boto3.client(
                    "s3",
                    endpoint_url=self._endpoint,
                    region_name=self._region,
                    aws_access_key_id=self._access_key,
                    aws_secret_access_key=self._secret_key,
                )
            return self._client

    def ensure(self) -> None:
        """Create the bucket if it does not exist (idempotent)."""
        from botocore.exceptions import ClientError

        try:
            self.client.head_bucket(Bucket=self.bucket)
            return
        except ClientError as exc:
            if _error_code(exc) not in ("404", "NoSuchBucket", "NotFound"):
                raise
        kwargs: dict[str, Any] = {"Bucket": self.bucket}
        if self._region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": self._region}
        try:
            self.client.create_bucket(**kwargs)
        except ClientError as exc:
            if _error_code(exc) not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise

    def put_object(self, key: str, data: bytes) -> None:
        """Write (or replace) one object."""
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data)

    def get_object(self, key: str) -> bytes | None:
        """The object's bytes, or None when absent."""
        from botocore.exceptions import ClientError

        try:
            response = self.client.get_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if _error_code(exc) in ("NoSuchKey", "404"):
                return None
            raise
        body: bytes = response["Body"].read()
        return body

    def delete_object(self, key: str) -> None:
        """Remove the object; absent is fine (S3 semantics)."""
        self.client.delete_object(Bucket=self.bucket, Key=key)

    def list_keys(self, prefix: str) -> list[str]:
        """Sorted keys starting with ``prefix`` (all pages)."""
        paginator = self.client.get_paginator("list_objects_v2")
        keys: list[str] = []
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            keys.extend(item["Key"] for item in page.get("Contents", []))
        return sorted(keys)


def _error_code(exc: Any) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))
