"""The eval's ingest progress into a log (not a terminal): a few draws, not one per poll."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

import pytest

from breadcrumb.eval import runner


class _Gateway:
    """Accepts everything; the log drains by one entry per poll (200 polls)."""

    def __init__(self) -> None:
        self.left = 200

    def submit(self, events: list[dict[str, Any]], _source: str) -> Any:
        return SimpleNamespace(accepted=len(events), duplicates=0, rejected=[])

    def request_flush(self, *_args: Any) -> None:
        pass

    def unprocessed(self) -> int:
        self.left = max(self.left - 1, 0)
        return self.left

    def wait_processed(self, _timeout: float) -> bool:
        return True


def test_ingest_progress_into_a_file_is_drawn_a_few_times(
        monkeypatch: pytest.MonkeyPatch) -> None:
    log = io.StringIO()  # not a TTY, like `breadcrumb eval ... 2> eval.log`
    monkeypatch.setattr("sys.stderr", log)
    monkeypatch.setattr(runner.time, "sleep", lambda _s: None)  # 200 polls at once
    events = [{"user_id": "u", "thread_id": "t", "event_id": str(i)} for i in range(3)]
    result = runner.ingest(SimpleNamespace(gateway=_Gateway()), events)
    assert result["accepted"] == 3
    draws = log.getvalue().count("\r")
    assert f"{199}/{199}" in log.getvalue()
    assert 1 <= draws <= 3, draws  # was one per poll: 200
