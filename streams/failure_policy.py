"""One failure policy for every runner: the embedded processor, the Faust agent, the replayers.

An error while applying one message is either

* **transient** — the store is unreachable or busy (connection refused / lost, MySQL
  1205 lock wait timeout, 1213 deadlock, 2006 / 2013 gone away, a timeout, Qdrant or
  Kafka unavailable): the message is retried with a capped exponential backoff for as
  long as it takes; the process stays up and nothing after it is acknowledged; or
* **permanent** — anything else (a bug, a record a processor cannot handle): retried a
  few times (``max_attempts``) and then dead-lettered with the error as its reason and
  the message's position, so one bad message never stalls its partition or a replay.

The policy is pure: it classifies and decides; the runner sleeps, retries and writes the
dead letter. Classification looks at the exception chain by class name and driver error
code, so this module imports no driver.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

#: MySQL / TiDB server and client codes that mean "try again": lock wait timeout,
#: deadlock, server gone away / lost connection / can't connect, server shutting down,
#: read-only while failing over, TiDB write conflicts and region errors.
TRANSIENT_SQL_CODES = frozenset({
    0, 1040, 1053, 1205, 1213, 1290, 1927, 2002, 2003, 2006, 2013, 2055, 4031,
    8002, 8022, 8027, 8028, 9001, 9002, 9005, 9007,
})
#: Exception class names (anywhere in the cause chain) that mean a service is unavailable.
TRANSIENT_NAMES = frozenset({
    "ConnectionError", "ConnectionRefusedError", "ConnectionResetError",
    "ConnectionAbortedError", "BrokenPipeError", "TimeoutError", "timeout",
    # httpx / qdrant-client
    "ConnectError", "ConnectTimeout", "ReadTimeout", "WriteTimeout", "PoolTimeout",
    "RemoteProtocolError", "ReadError", "WriteError", "ResponseHandlingException",
    # aiokafka
    "KafkaConnectionError", "KafkaTimeoutError", "NodeNotReadyError", "RequestTimedOutError",
    "LeaderNotAvailableError", "NotLeaderForPartitionError", "NotEnoughReplicasError",
    "NotEnoughReplicasAfterAppendError", "KafkaUnavailableError", "NoBrokersAvailable",
    # boto / S3
    "EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError",
})
_TRANSIENT_ERRNOS = frozenset({errno.ECONNREFUSED, errno.ECONNRESET, errno.ECONNABORTED,
                               errno.EPIPE, errno.ETIMEDOUT, errno.EHOSTUNREACH,
                               errno.ENETUNREACH, errno.EAGAIN})
_SQL_ERROR_NAMES = frozenset({"OperationalError", "InterfaceError", "InternalError"})
_SQLITE_BUSY = ("database is locked", "database table is locked", "database is busy")
_UNAVAILABLE_HTTP = frozenset({408, 429, 502, 503, 504})


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _one_is_transient(exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & TRANSIENT_NAMES:
        return True
    if names & _SQL_ERROR_NAMES and exc.args and isinstance(exc.args[0], int):
        return exc.args[0] in TRANSIENT_SQL_CODES
    if "OperationalError" in names and any(m in str(exc) for m in _SQLITE_BUSY):
        return True
    if isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS:
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and status in _UNAVAILABLE_HTTP


def is_transient(exc: BaseException) -> bool:
    """True when ``exc`` (or an error it was raised from) means "the store is not there
    or busy right now", i.e. retrying the same message later can succeed."""
    return any(_one_is_transient(e) for e in _chain(exc))


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do after a failed attempt: ``retry`` after ``delay`` s, or ``dead_letter``."""

    action: str  # "retry" | "dead_letter"
    delay: float
    transient: bool
    reason: str

    @property
    def retry(self) -> bool:
        return self.action == "retry"


@dataclass(frozen=True, slots=True)
class FailurePolicy:
    """Transient → retry forever with capped backoff; permanent → dead letter after
    ``max_attempts`` attempts."""

    max_attempts: int = 3
    base_delay: float = 0.2
    max_delay: float = 5.0

    def backoff(self, attempt: int) -> float:
        """Delay before attempt ``attempt + 1`` (attempt counts from 1): doubling, capped."""
        return float(min(self.max_delay, self.base_delay * 2.0 ** min(60, max(0, attempt - 1))))

    def decide(self, exc: BaseException, attempts: int) -> Decision:
        """``attempts``: how many times the message has failed, this failure included."""
        transient = is_transient(exc)
        if transient or attempts < self.max_attempts:
            return Decision("retry", self.backoff(attempts), transient, describe(exc))
        return Decision("dead_letter", 0.0, False,
                        f"processing failed {attempts} times: {describe(exc)}")


#: What a driver error says when its own message says nothing (pymysql raises
#: ``InterfaceError(0, '')`` on a connection that is already closed).
_SILENT_ERRORS = {
    ("InterfaceError", 0): "the database connection is closed (lost while the server "
                           "was unreachable); reconnecting",
    ("OperationalError", 0): "the database connection was lost; reconnecting",
}


def describe(exc: BaseException) -> str:
    """A one-line reason a person can read: class, driver code and message (an empty
    driver message replaced by what it means), then what it was raised from; cut to a
    readable length."""
    parts = [_one_line(e) for e in _chain(exc)]
    text = " (from ".join(parts) + ")" * (len(parts) - 1)
    return text if len(text) <= 500 else text[:497] + "..."


def _one_line(exc: BaseException) -> str:
    name = type(exc).__name__
    args = exc.args
    if len(args) >= 1 and isinstance(args[0], int) and (
            len(args) == 1 or isinstance(args[1], str)):
        code, message = args[0], (args[1] if len(args) > 1 else "")
        meaning = _SILENT_ERRORS.get((name, code)) if not message.strip() else None
        return f"{name} {code}: {meaning or message or 'no message'}"
    text = " ".join(str(exc).split())
    return f"{name}: {text}" if text else name


@dataclass
class Attempts:
    """Failure counts per position (a runner's memory of which message failed how often)."""

    counts: dict[Any, int] = field(default_factory=dict)

    def failed(self, position: Any) -> int:
        self.counts[position] = self.counts.get(position, 0) + 1
        return self.counts[position]

    def done(self, position: Any) -> None:
        self.counts.pop(position, None)


def log_position(seq: int) -> str:
    """The position of an embedded log entry (also its dead letter's unique key)."""
    return f"log:{seq}"


def kafka_position(topic: str, partition: int, offset: int) -> str:
    """The position of a Kafka message (also its dead letter's unique key)."""
    return f"{topic}/{partition}/{offset}"
