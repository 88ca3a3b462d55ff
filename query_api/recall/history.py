"""Knowledge updates, dated: what replaced a value quoted as history, and when.

An evidence item that quotes values a newer memory replaced names them in
``superseded_values`` (:func:`.extract.superseded.drop_superseded`); :func:`mark_superseded`
adds ``superseded``: per value, the value that replaced it, the memory that said so and
that memory's time (``superseded_at``). The item's own ``ts`` dates the old value.
"""

from __future__ import annotations

from typing import Any

from breadcrumb.stores.ports import MemoryStore
from breadcrumb.topics.records import Observation


def mark_superseded(store: MemoryStore, user_id: str, evidence: list[dict[str, Any]],
                    memories: dict[str, Observation]) -> list[dict[str, Any]]:
    """Add ``superseded`` to each item with ``superseded_values`` (others unchanged)."""
    marked = [(item, _replaced(memories.get(str(item.get("memory_id"))),
                               item["superseded_values"]))
              for item in evidence if item.get("superseded_values")]
    if not marked:
        return evidence
    ids = sorted({r["superseded_by"] for _, rows in marked for r in rows if r["superseded_by"]})
    said = {m.id: m.created_at for m in store.get_memories(user_id, ids)}
    for item, rows in marked:
        item["superseded"] = [{**r, "superseded_at": said.get(r["superseded_by"] or "")}
                              for r in rows]
    return evidence


def _replaced(memory: Observation | None, values: list[str]) -> list[dict[str, Any]]:
    facts = (memory.metadata.get("superseded_facts") or {}) if memory is not None else {}
    out = []
    for key, fact in sorted(facts.items()):
        if isinstance(fact, dict) and str(fact.get("value")) in values:
            out.append({"key": key, "value": str(fact.get("value")),
                        "new_value": fact.get("new_value"),
                        "superseded_by": fact.get("superseded_by")})
    return out
