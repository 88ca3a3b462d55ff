"""The failure policy: which errors are transient, backoff, when to dead-letter."""

from __future__ import annotations

import sqlite3

import pymysql
import pytest

from breadcrumb.streams.failure_policy import (
    Attempts,
    FailurePolicy,
    is_transient,
    kafka_position,
    log_position,
)


@pytest.mark.parametrize("exc", [
    pymysql.err.OperationalError(1213, "Deadlock found when trying to get lock"),
    pymysql.err.OperationalError(1205, "Lock wait timeout exceeded"),
    pymysql.err.OperationalError(2006, "MySQL server has gone away"),
    pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query"),
    pymysql.err.OperationalError(2003, "Can't connect to MySQL server on '127.0.0.1'"),
    pymysql.err.InterfaceError(0, ""),
    ConnectionRefusedError(111, "Connection refused"),
    TimeoutError("timed out"),
    sqlite3.OperationalError("database is locked"),
])
def test_unavailable_or_busy_stores_are_transient(exc: BaseException) -> None:
    assert is_transient(exc)


def test_a_transient_cause_makes_the_wrapping_error_transient() -> None:
    try:
        try:
            raise pymysql.err.OperationalError(2013, "Lost connection")
        except pymysql.err.OperationalError as inner:
            raise RuntimeError("upsert failed") from inner
    except RuntimeError as outer:
        assert is_transient(outer)


def test_vendor_unavailable_errors_by_name_and_status() -> None:
    class ResponseHandlingException(Exception):  # qdrant-client's, without importing it
        pass

    class UnexpectedResponse(Exception):
        status_code = 503

    class KafkaConnectionError(Exception):
        pass

    assert is_transient(ResponseHandlingException("connect failed"))
    assert is_transient(UnexpectedResponse())
    assert is_transient(KafkaConnectionError())


@pytest.mark.parametrize("exc", [
    ValueError("bad value"), KeyError("user_id"),
    pymysql.err.IntegrityError(1062, "Duplicate entry"),
    pymysql.err.OperationalError(1054, "Unknown column"),
    pymysql.err.DataError(1406, "Data too long"),
    sqlite3.OperationalError("no such table: x"),
])
def test_bugs_and_bad_records_are_permanent(exc: BaseException) -> None:
    assert not is_transient(exc)


def test_backoff_doubles_and_is_capped() -> None:
    policy = FailurePolicy(max_attempts=3, base_delay=0.5, max_delay=3.0)
    assert [policy.backoff(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]


def test_transient_errors_are_retried_forever_permanent_ones_dead_lettered() -> None:
    policy = FailurePolicy(max_attempts=3)
    down = pymysql.err.OperationalError(2003, "Can't connect")
    assert all(policy.decide(down, n).retry for n in (1, 3, 50, 10_000))
    boom = RuntimeError("boom")
    assert [policy.decide(boom, n).action for n in (1, 2, 3)] == [
        "retry", "retry", "dead_letter"]
    final = policy.decide(boom, 3)
    assert "processing failed 3 times" in final.reason and "RuntimeError: boom" in final.reason


def test_attempts_are_counted_per_position_and_forgotten_when_done() -> None:
    attempts = Attempts()
    assert [attempts.failed("a"), attempts.failed("a"), attempts.failed("b")] == [1, 2, 1]
    attempts.done("a")
    assert attempts.failed("a") == 1


def test_positions_name_where_the_message_is() -> None:
    assert log_position(17) == "log:17"
    assert kafka_position("t-agent-events", 2, 40) == "t-agent-events/2/40"


def test_retry_causes_read_as_sentences() -> None:
    """Issue 30: not ``InterfaceError: (0, '')``; the chain of causes on one line."""
    import pymysql

    from breadcrumb.streams.failure_policy import describe

    closed = describe(pymysql.err.InterfaceError(0, ""))
    assert closed.startswith("InterfaceError 0: the database connection is closed")
    assert describe(pymysql.err.OperationalError(2003, "Can't connect")) == (
        "OperationalError 2003: Can't connect")
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as inner:
            raise RuntimeError("flush failed") from inner
    except RuntimeError as exc:
        assert describe(exc) == ("RuntimeError: flush failed (from ConnectionRefusedError "
                                 "111: Connection refused)")
