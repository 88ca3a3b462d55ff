"""Issue 30: a dead letter keeps the received bytes recoverable, whatever they are."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from breadcrumb.topics.records import BASE64_PREFIX, DeadLetter, letter_payload


def _letter(value: bytes) -> DeadLetter:
    return DeadLetter("r", letter_payload(value), "2026-11-30T00:00:00+00:00")


@given(st.binary(max_size=200))
def test_any_bytes_come_back_exactly(value: bytes) -> None:
    assert _letter(value).original_bytes() == value


@pytest.mark.parametrize("value", [b'{"a": 1}', "héllo".encode(), b"[1, 2]"])
def test_utf8_text_is_kept_readable(value: bytes) -> None:
    assert letter_payload(value) == value.decode()


@pytest.mark.parametrize("value", [b"\xff\xfe", b"a\x00b", BASE64_PREFIX.encode() + b"x"])
def test_undecodable_nul_or_prefixed_values_are_base64(value: bytes) -> None:
    payload = letter_payload(value)
    assert payload.startswith(BASE64_PREFIX) and _letter(value).original_bytes() == value
