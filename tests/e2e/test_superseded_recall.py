"""After a value changes, recall offers the new value as current; history shows both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from tests.support.events import november_event as _ev


def _history() -> list[dict[str, Any]]:
    old = [_ev(0, "db-setup", 2, "message", "Set up the database connection settings."),
           _ev(1, "db-setup", 2, "file_edit", "+DB_PORT=5432\n+REDIS_URL=redis://cache:6379/0",
               path=".env"),
           _ev(2, "db-setup", 2, "session_end", "end")]
    new = [_ev(0, "pgbouncer", 9, "message", "Route the database through pgbouncer."),
           _ev(1, "pgbouncer", 9, "file_edit", "+DB_PORT=6432", path=".env"),
           _ev(2, "pgbouncer", 9, "session_end", "end")]
    return old + new


def test_new_value_is_current_and_history_is_marked(tmp_path: Path) -> None:
    runtime = build_runtime(Settings(data_dir=tmp_path / "d"), embedder=HashEmbedder())
    try:
        runtime.gateway.submit(_history(), "test")
        runtime.gateway.wait_processed(120)
        ask = "which DB_PORT does the database use?"
        current = runtime.recall.recall(RecallRequest(user_id="u1", query=ask, k=5))
        text = "\n".join(e["extracted_text"] for e in current["evidence"])
        assert "DB_PORT=6432" in text
        assert "5432" not in text  # the superseded value is never offered as current
        redis = runtime.recall.recall(RecallRequest(user_id="u1", query="the exact REDIS_URL"))
        assert "redis://cache:6379/0" in "\n".join(e["extracted_text"] for e in redis["evidence"])

        history = runtime.recall.recall(RecallRequest(user_id="u1", query=ask, k=5,
                                                      include_superseded=True))
        items = history["evidence"]
        both = "\n".join(e["extracted_text"] for e in items)
        assert "DB_PORT=6432" in both and "DB_PORT=5432" in both
        marked = [e for e in items if "DB_PORT=5432" in e["extracted_text"]]
        assert marked and all(e.get("superseded_values") == ["5432"] for e in marked)
    finally:
        runtime.stop()
