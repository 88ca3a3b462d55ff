"""The embedded event log of a SQL store: the runner's durable inbox, appended by intake
and read in ``seq`` order by the processors and by replay."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import SqlDatabase
from breadcrumb.stores.sql.packed import packer, unpack

#: One item for ``append_log``: (user_id, event_id, thread_key, payload_json).
LogItem = tuple[str | None, str | None, str, str]  # as stores.ports.tables.LogItem


class SqlEventLog:
    """The ``event_log`` table (``EventLog``, :mod:`stores.ports`). On SQLite a payload is
    stored compressed where that is shorter (:mod:`stores.sql.packed`, issue 49); every
    read hands back its text."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        self._pack = packer(db.dialect.mysql)

    def append_log(self, payloads: Sequence[LogItem]) -> list[bool]:
        """Append (user_id, event_id, thread_key, payload_json) items in ONE transaction.

        Per item True if appended, False if that (user_id, event_id) is already in the log
        (also within this batch). Items whose event_id is None always append.
        """
        now = datetime.now(UTC).isoformat()
        with self.db.transaction():
            return [self.db.insert_unique(s.INSERT_LOG, (u, e, k, self._pack(p), now))
                    for u, e, k, p in payloads]

    def read_log_all(self, after_seq: int, limit: int) -> list[tuple[int, str]]:
        """Every (seq, payload) with seq > after_seq, processed or not (replay reads this)."""
        rows = self.db.read("SELECT seq, payload FROM event_log WHERE seq > ? ORDER BY seq LIMIT ?",
                          (after_seq, limit))
        return [(int(q), unpack(p)) for q, p in rows]

    def read_log_keys(self, after_seq: int, limit: int) -> list[tuple[int, str, str]]:
        """(seq, thread_key, accepted_at) of entries with seq > after_seq, in seq order,
        without their payloads (the embedded runner's fair scheduler reads ahead with this)."""
        rows = self.db.read("SELECT seq, thread_key, accepted_at FROM event_log WHERE seq > ? "
                          "ORDER BY seq LIMIT ?", (after_seq, limit))
        return [(int(q), str(k), str(a)) for q, k, a in rows]

    def read_log_entries(self, seqs: Sequence[int]) -> dict[int, str]:
        """The payloads of the given log positions, by position."""
        out: dict[int, str] = {}
        for start in range(0, len(seqs), 500):
            part = list(seqs[start:start + 500])
            marks = ",".join("?" * len(part))
            rows = self.db.read(f"SELECT seq, payload FROM event_log WHERE seq IN ({marks})", part)
            out.update((int(q), unpack(p)) for q, p in rows)
        return out

    def max_log_seq(self) -> int:
        """The newest log position (0 for an empty log)."""
        return self.db.scalar("SELECT MAX(seq) FROM event_log")

    def read_log(self, after_seq: int, limit: int) -> list[tuple[int, str]]:
        """Unprocessed (seq, payload) with seq > after_seq, in seq order."""
        rows = self.db.read("SELECT seq, payload FROM event_log WHERE processed = 0 AND seq > ? "
                          "ORDER BY seq LIMIT ?", (after_seq, limit))
        return [(int(q), unpack(p)) for q, p in rows]

    def mark_processed(self, seq: int) -> None:
        """Flag one log entry as processed."""
        with self.db.transaction():
            self.db.execute("UPDATE event_log SET processed = 1 WHERE seq = ?", (seq,))

    def mark_processed_many(self, seqs: Sequence[int]) -> None:
        """Flag many log entries as processed, in one statement."""
        if not seqs:
            return
        with self.db.transaction():
            self.db.execute_many("UPDATE event_log SET processed = 1 WHERE seq = ?",
                               [(seq,) for seq in seqs])

    def count_unprocessed(self) -> int:
        """Log entries not yet processed."""
        return self.db.scalar("SELECT COUNT(*) FROM event_log WHERE processed = 0")

    def count_log(self) -> int:
        """All log entries."""
        return self.db.scalar("SELECT COUNT(*) FROM event_log")

    def max_processed_seq(self) -> int:
        """The newest log position flagged processed (0 when none)."""
        # newest first: stops at the first processed entry (no index holds processed ones)
        return self.db.scalar("SELECT seq FROM event_log WHERE processed = 1 "
                              "ORDER BY seq DESC LIMIT 1")

    def count_log_after(self, seq: int, thread_key: str | None = None) -> int:
        """Log entries after position ``seq`` (what a generation has not applied yet), of
        one thread when ``thread_key`` is given."""
        if thread_key is None:
            return self.db.scalar("SELECT COUNT(*) FROM event_log WHERE seq > ?", (seq,))
        return self.db.scalar("SELECT COUNT(*) FROM event_log WHERE seq > ? AND thread_key = ?",
                            (seq, thread_key))
