"""The dead letters of a SQL store (DeadLetterStore): rejected inputs with their reason,
keyed by their position so a redelivered message is not dead-lettered twice, and counted
in the same transaction; and their re-drives (``query_api.redrive``)."""

from __future__ import annotations

from typing import Any

from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import IndexConflictError, SqlDatabase, id_text
from breadcrumb.stores.sql.counters import SqlCounters
from breadcrumb.topics.records import DeadLetter

#: The counter of dead letters written (``/v1/stats`` ``dead_lettered``, ``/metrics``).
DEAD_LETTERED = "dead_lettered"


class SqlDeadLetters:
    """Dead letters and their keys (``DeadLetterStore``, :mod:`stores.ports`); the count
    lives in the store's counters (:class:`~stores.sql.counters.SqlCounters`)."""

    def __init__(self, db: SqlDatabase, counters: SqlCounters) -> None:
        self.db = db
        self.counters = counters

    def put_dead_letter(self, letter: DeadLetter, key: str | None = None) -> bool:
        """Keep a rejected input with its reason and count it (``dead_lettered``, in the
        same transaction: the counter and the table agree). With a ``key`` (the message's
        position) a second letter under the same key changes nothing and returns False."""
        with self.db.transaction():
            if key is not None and self.db.fetch(
                    "SELECT 1 FROM dead_letter_keys WHERE letter_key = ?", (key,)):
                return False
            letter_id = self.db.insert_id(s.INSERT_DEAD_LETTER, s.dead_letter_to_row(letter))
            if key is not None:
                if not self.db.insert_unique("INSERT INTO dead_letter_keys (letter_key, "
                                           "dead_letter_id) VALUES (?, ?)", (key, letter_id)):
                    raise IndexConflictError(f"dead letter {key!r} written concurrently")
            self.counters.incr(DEAD_LETTERED)  # the one dead-letter count: moves with each new row
        return True

    def dead_letter_positions(self, limit: int = 100) -> list[tuple[str, str, str]]:
        """(position, reason, payload) of keyed dead letters, newest first."""
        rows = self.db.read("SELECT k.letter_key, d.reason, d.payload FROM dead_letter_keys k "
                          "JOIN dead_letters d ON d.id = k.dead_letter_id "
                          "ORDER BY d.id DESC LIMIT ?", (limit,))
        return [(id_text(a), str(b), str(c)) for a, b, c in rows]

    def count_dead_letters(self) -> int:
        """All dead letters."""
        return self.db.scalar("SELECT COUNT(*) FROM dead_letters")

    def list_dead_letters(self, limit: int = 100) -> list[DeadLetter]:
        """The most recent dead letters, newest first."""
        rows = self.db.read(f"{s.SELECT_DEAD_LETTERS} ORDER BY id DESC LIMIT ?", (limit,))
        return [s.dead_letter_from_row(r) for r in rows]

    # --- re-drives (``dead_letter_redrives``, created with the erasure's tables) ----------

    def redrive_of(self, letter_id: int) -> dict[str, Any] | None:
        """When, by whom and how a letter was re-driven (None: never)."""
        rows = self.db.read("SELECT at, actor, outcome FROM dead_letter_redrives "
                            "WHERE dead_letter_id = ?", (letter_id,))
        return {"at": rows[0][0], "actor": rows[0][1], "outcome": rows[0][2]} if rows else None

    def add_redrive(self, letter_id: int, at: str, actor: str, outcome: str) -> None:
        """Record a letter's re-drive (each letter is re-driven once)."""
        with self.db.transaction():
            self.db.execute("INSERT INTO dead_letter_redrives (dead_letter_id, at, actor, "
                            "outcome) VALUES (?, ?, ?, ?)", (letter_id, at, actor, outcome))
