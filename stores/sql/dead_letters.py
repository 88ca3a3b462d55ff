"""The dead letters of a SQL store (DeadLetterStore): rejected inputs with their reason,
keyed by their position so a redelivered message is not dead-lettered twice, and counted
in the same transaction."""

from __future__ import annotations

from contextlib import closing

from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import IndexConflictError, id_text
from breadcrumb.stores.sql.states import LogStateMixin
from breadcrumb.topics.records import DeadLetter

#: The counter of dead letters written (``/v1/stats`` ``dead_lettered``, ``/metrics``).
DEAD_LETTERED = "dead_lettered"


class DeadLettersSql(LogStateMixin):
    """Dead letters and their keys; the count lives in the counters (:class:`LogStateMixin`)."""

    def put_dead_letter(self, letter: DeadLetter, key: str | None = None) -> bool:
        """Keep a rejected input with its reason and count it (``dead_lettered``, in the
        same transaction: the counter and the table agree). With a ``key`` (the message's
        position) a second letter under the same key changes nothing and returns False."""
        with self.transaction():
            if key is not None and self._fetch(
                    "SELECT 1 FROM dead_letter_keys WHERE letter_key = ?", (key,)):
                return False
            with closing(self._require_open().cursor()) as cur:
                cur.execute(self.dialect.sql(s.INSERT_DEAD_LETTER), s.dead_letter_to_row(letter))
                letter_id = int(cur.lastrowid)
            if key is not None:
                if not self._insert_unique("INSERT INTO dead_letter_keys (letter_key, "
                                           "dead_letter_id) VALUES (?, ?)", (key, letter_id)):
                    raise IndexConflictError(f"dead letter {key!r} written concurrently")
            self.incr(DEAD_LETTERED)  # the one dead-letter count: moves with each new row
        return True

    def dead_letter_positions(self, limit: int = 100) -> list[tuple[str, str, str]]:
        """(position, reason, payload) of keyed dead letters, newest first."""
        rows = self._read("SELECT k.letter_key, d.reason, d.payload FROM dead_letter_keys k "
                          "JOIN dead_letters d ON d.id = k.dead_letter_id "
                          "ORDER BY d.id DESC LIMIT ?", (limit,))
        return [(id_text(a), str(b), str(c)) for a, b, c in rows]

    def count_dead_letters(self) -> int:
        """All dead letters."""
        return self._scalar("SELECT COUNT(*) FROM dead_letters")

    def list_dead_letters(self, limit: int = 100) -> list[DeadLetter]:
        """The most recent dead letters, newest first."""
        rows = self._read(f"{s.SELECT_DEAD_LETTERS} ORDER BY id DESC LIMIT ?", (limit,))
        return [s.dead_letter_from_row(r) for r in rows]
