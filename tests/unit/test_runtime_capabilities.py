"""What the browse, forget and re-drive routes ask of a runtime, by mode (issue 25: the
capability Protocols of ``stores.ports`` instead of ``getattr`` probes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from breadcrumb.query_api.runtime import Runtime
from breadcrumb.settings import Settings, settings_error_line
from breadcrumb.stores.ports import AppliesLog, OpenWindowStates, OwnStore, SettlesOwed
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.streams.embedded.runner import EmbeddedRunner
from breadcrumb.streams.kafka.gateway import KafkaGateway

NOW = "2026-11-30T00:00:00+00:00"


def _runtime(gateway: Any, store: Any) -> Runtime:
    return Runtime(settings=Settings(), gateway=gateway, recall=None,  # type: ignore[arg-type]
                   raw=store.events, memories=store.memories,
                   dead_letters=store.dead_letters, index=None,  # type: ignore[arg-type]
                   embedder=None, audit=store.audit, browse=store.browse,
                   explore=store.explore)  # type: ignore[arg-type]


def _stores(tmp_path: Path) -> tuple[SqliteStore, SqliteStore]:
    log, derived = SqliteStore(tmp_path / "log.sqlite3"), SqliteStore(tmp_path / "gen.sqlite3")
    log.open()
    derived.open()
    return log, derived


def test_the_embedded_runner_applies_the_log_here(tmp_path: Path) -> None:
    log, derived = _stores(tmp_path)
    runner = EmbeddedRunner(log, None, lambda: NOW, 60.0, derived=derived)  # type: ignore[arg-type]
    assert isinstance(runner, AppliesLog) and isinstance(runner, OwnStore)
    assert not isinstance(runner, SettlesOwed)
    runtime = _runtime(runner, derived)
    assert runtime.runner() is runner
    assert runtime.log_store() is log and runtime.derived_store() is derived
    with runtime.runner().paused():  # type: ignore[union-attr]
        assert runner._lock._is_owned()  # type: ignore[attr-defined]
    log.close()
    derived.close()


def test_the_kafka_gateway_has_a_store_and_settles_but_applies_nothing(tmp_path: Path) -> None:
    log, derived = _stores(tmp_path)
    gateway = KafkaGateway(Settings(mode="cluster"), log, lambda: NOW)
    assert isinstance(gateway, OwnStore) and isinstance(gateway, SettlesOwed)
    assert not isinstance(gateway, AppliesLog)
    runtime = _runtime(gateway, derived)
    assert runtime.runner() is None
    # cluster: the gateway's tables are the current generation's (the alias moves both)
    assert runtime.log_store() is log and runtime.derived_store() is log
    log.close()
    derived.close()


def test_a_gateway_without_a_store_leaves_the_runtime_its_ports_only(tmp_path: Path) -> None:
    _, derived = _stores(tmp_path)
    runtime = _runtime(object(), derived)
    assert runtime.runner() is None
    assert runtime.log_store() is None and runtime.derived_store() is None
    assert runtime.memories is derived.memories and runtime.browse is derived.browse
    assert isinstance(derived.states, OpenWindowStates)  # the fresh tail's windows (threads)
    derived.close()


def test_a_settings_error_is_one_line_whatever_its_kind() -> None:
    assert settings_error_line(ValueError("bad\n  value")) == "bad value"
    with pytest.raises(ValidationError) as caught:
        Settings(worker_web_port=0)
    assert settings_error_line(caught.value).startswith("BREADCRUMB_WORKER_WEB_PORT=0: ")
