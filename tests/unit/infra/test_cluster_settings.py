"""Cluster settings an operator can run with (issue 30): the vector store every process of
a deployment can share by default, misconfigurations in one line naming the variable, and
the worker's web server on loopback at a port that is free or refused in one line."""

from __future__ import annotations

import socket

import pytest
from pydantic import ValidationError

from breadcrumb.commands.worker import DEFAULT_WEB_PORT, web_port
from breadcrumb.infra.preflight import explain
from breadcrumb.settings import Settings, settings_error_line
from breadcrumb.stores.data_dir import StartupError


def test_the_default_vector_store_is_one_every_process_can_share() -> None:
    assert Settings(mode="cluster").vector_store == "topic"
    assert Settings(mode="cluster", qdrant_url="http://q:6333").vector_store == "qdrant"
    assert Settings(mode="cluster", vector_store="qdrant").vector_store == "qdrant"
    assert Settings(mode="cluster", qdrant_url="http://q:6333",
                    vector_store="topic").vector_store == "topic"


def test_a_bad_setting_is_one_line_naming_the_variable() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(vector_store="qdrnt", worker_web_port=0)  # type: ignore[arg-type]
    line = settings_error_line(caught.value)
    assert "\n" not in line
    assert "BREADCRUMB_VECTOR_STORE='qdrnt'" in line and "BREADCRUMB_WORKER_WEB_PORT=0" in line


def test_a_held_local_folder_is_explained() -> None:
    settings = Settings(mode="cluster")
    held = RuntimeError("Storage folder .breadcrumb/qdrant is already accessed by another "
                        "instance of Qdrant client. If you require concurrent access, use ...")
    try:
        raise ValueError("wrapped") from held
    except ValueError as exc:
        line = explain(settings, exc)
    assert line is not None and ".breadcrumb/qdrant" in line and "BREADCRUMB_DATA_DIR" in line
    assert explain(settings, ValueError("something else")) is None


def test_the_web_port_is_the_default_a_free_one_or_refused_when_configured() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        with pytest.raises(StartupError, match=f"port {taken} on 127.0.0.1 is taken "
                           r"\(BREADCRUMB_WORKER_WEB_PORT"):
            web_port(Settings(mode="cluster", worker_web_port=taken))
    chosen = web_port(Settings(mode="cluster"))
    with socket.socket() as probe:  # the default when free, else another free port
        probe.bind(("127.0.0.1", chosen))
    if chosen != DEFAULT_WEB_PORT:
        with socket.socket() as probe, pytest.raises(OSError):
            probe.bind(("127.0.0.1", DEFAULT_WEB_PORT))
