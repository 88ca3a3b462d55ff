"""Intake's tombstone check (issue 26): events of an erased scope never reach the log.

An event of a forgotten thread or tenant, or one of a forgotten memory's events, is taken
out of the batch and reported in ``rejected`` with its reason. It is NOT dead-lettered:
a dead letter keeps the payload as received, which is what the erasure removed.
"""

from __future__ import annotations

from breadcrumb.stores.ports.tables import Tombstones
from breadcrumb.streams.gateway import Checked
from breadcrumb.topics.records import Event

ERASED = "erased: this event's thread or tenant was forgotten (POST /v1/forget); not kept"


def drop_erased(store: Tombstones, checked: Checked, count: int) -> Checked:
    """``checked`` without the events an erasure covers (``count``: items in the batch,
    to name each dropped one by its position)."""
    if not checked.valid:
        return checked
    keys = [(e.user_id, e.thread_id, e.event_id, e.ts) for e, _raw in checked.valid]
    gone = store.erased_positions(keys)
    if not gone:
        return checked
    refused = {r["position"] for r in checked.rejected}
    positions = [i for i in range(count) if i not in refused]
    rejected = checked.rejected + [{"position": positions[i], "error": ERASED}
                                   for i in sorted(gone)]
    rejected.sort(key=lambda r: int(r["position"]))
    valid = [v for i, v in enumerate(checked.valid) if i not in gone]
    return Checked(valid, checked.letters, rejected)


def erased(store: Tombstones, event: Event) -> bool:
    """Whether the processors must drop ``event`` (a replay or a redelivery of a forgotten
    scope: the erasure's tombstone is in every store it erased)."""
    return store.is_erased(event.user_id, event.thread_id, event.event_id, event.ts)
