"""Dead letters: listing across the stores that hold them, and the admin re-drive.

Intake rejections live with the event log; letters the processors gave up on with the
generation of derived stores (embedded; one store when they are the same, as in the
``main`` generation and in cluster mode). A letter's id is its row id in the log store,
or ``g<id>`` in a separate generation store.

A re-drive sends the payload as received (or a fixed ``event``) through intake again,
validated first so a still-invalid event answers 422 and writes no second letter. A
letter the embedded processors gave up on (position ``log:<seq>``) is applied again from
the log (its event is accepted there already); the runner is held between entries while
it runs. Each letter is re-driven once; ``dead_letter_redrives`` keeps when, by whom and
how it went.
"""

from __future__ import annotations

from typing import Any

import orjson

from breadcrumb.query_api.errors import ApiError
from breadcrumb.query_api.runtime import Runtime
from breadcrumb.stores.clock import utc_now_iso
from breadcrumb.stores.ports import AppliesLog
from breadcrumb.stores.ports.tables import Store
from breadcrumb.streams.gateway import check_batch, limits_of

GENERATION_PREFIX = "g"


def letter_stores(runtime: Runtime) -> list[tuple[str, Store]]:
    """(id prefix, store) of every store holding dead letters, the log store first."""
    log_store, derived = runtime.log_store(), runtime.derived_store()
    out: list[tuple[str, Store]] = [] if log_store is None else [("", log_store)]
    if derived is not None and derived is not log_store:
        out.append((GENERATION_PREFIX if out else "", derived))
    return out


def letters_view(runtime: Runtime, user_id: str | None, limit: int,
                 before: int | None) -> list[dict[str, Any]]:
    """Dead letters newest first with their re-drive, if any."""
    out: list[dict[str, Any]] = []
    for prefix, store in letter_stores(runtime):
        store.erasure.ensure_tables()
        for letter in store.browse.list_dead_letters(user_id, limit, before):
            letter["redrive"] = store.dead_letters.redrive_of(letter["id"])
            letter["id"] = f"{prefix}{letter['id']}" if prefix else letter["id"]
            out.append(letter)
    return out[:limit]


def _find(runtime: Runtime, letter_id: str) -> tuple[Store, int, dict[str, Any]]:
    stores = dict(letter_stores(runtime))
    prefix = GENERATION_PREFIX if letter_id.startswith(GENERATION_PREFIX) else ""
    number = letter_id[len(prefix):]
    if not number.isdigit() or prefix not in stores:
        raise ApiError(404, "not_found", f"no dead letter {letter_id}")
    store = stores[prefix]
    found = store.browse.get_dead_letter(int(number))
    if found is None:
        raise ApiError(404, "not_found", f"no dead letter {letter_id}")
    return store, int(number), found


def redrive_letter(runtime: Runtime, letter_id: str, event: dict[str, Any] | None,
                   actor: str) -> dict[str, Any]:
    """Re-drive one dead letter; the answer says how it went."""
    store, number, letter = _find(runtime, letter_id)
    store.erasure.ensure_tables()
    if store.dead_letters.redrive_of(number) is not None:
        raise ApiError(409, "already_redriven", f"dead letter {letter_id} was re-driven before")
    position = letter["position"] or ""
    runner = runtime.runner()
    if event is None and position.startswith("log:") and runner is not None:
        outcome = _reapply(runner, int(position[4:]), letter["payload"])
    else:
        outcome = _resubmit(runtime, event if event is not None else _payload(letter))
    at = utc_now_iso()
    store.dead_letters.add_redrive(number, at, actor, outcome)
    return {"id": letter_id, "outcome": outcome, "redriven_at": at, "actor": actor}


def _payload(letter: dict[str, Any]) -> Any:
    try:
        return orjson.loads(letter["payload"])
    except orjson.JSONDecodeError as exc:
        raise ApiError(422, "payload_not_json", "the payload as received is not JSON: send "
                       'the fixed event as {"event": {...}}') from exc


def _resubmit(runtime: Runtime, item: Any) -> str:
    """Through intake, once it validates (a still-invalid event writes no new letter)."""
    checked = check_batch([item], utc_now_iso(), "redrive", limits_of(runtime.settings))
    if checked.rejected:
        raise ApiError(422, "still_invalid", f"the event is still refused: "
                       f"{checked.rejected[0]['error']}")
    result = runtime.gateway.submit([item], "redrive")
    if result.rejected:
        raise ApiError(409, "refused", str(result.rejected[0]["error"]))
    return "accepted" if result.accepted else "duplicate"


def _reapply(runner: AppliesLog, seq: int, payload: str) -> str:
    """Apply a log entry the processors gave up on again (the runner held meanwhile)."""
    from breadcrumb.streams.embedded.log_unit import log_items, log_unit

    with runner.paused():
        entry = runner.store.log.read_log_entries([seq]).get(seq, payload)
        try:
            # the runner's marks stay where they are: the unit's cursor marks nothing
            unit = log_unit(runner.derived, runner.service, mark=lambda _items: None)
            result = unit.apply(log_items([(seq, entry)])).results[0]
        except Exception as exc:  # still failing: say why, the letter stays as it is
            raise ApiError(409, "still_failing", f"log entry {seq} fails again: "
                           f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                           ) from exc
    return "applied" if result.outcome == "processed" else str(result.outcome)
