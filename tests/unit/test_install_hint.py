"""The missing-extra line names an install command that works for this copy.

Until the package is on an index, ``pip install 'breadcrumb-memory[server]'`` finds
nothing: a copy installed from a clone, a git URL or a wheel file (PEP 610
``direct_url.json``, written by pip and uv) is told to install the extra from there.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.extras import install_hint, missing_extra


class FakeDist:
    def __init__(self, direct_url: dict[str, Any] | None) -> None:
        self.text = None if direct_url is None else json.dumps(direct_url)

    def read_text(self, name: str) -> str | None:
        return self.text if name == "direct_url.json" else None


def installed(monkeypatch: pytest.MonkeyPatch, direct_url: dict[str, Any] | None) -> None:
    def distribution(name: str) -> FakeDist:
        assert name == "breadcrumb-memory"
        return FakeDist(direct_url)

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)


def test_an_editable_clone_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    installed(monkeypatch, {"url": tmp_path.as_uri(), "dir_info": {"editable": True}})
    assert install_hint("server") == f"pip install -e '{tmp_path}[server]'"


def test_a_wheel_file_is_named_while_it_exists(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    wheel = tmp_path / "breadcrumb_memory-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK")
    installed(monkeypatch, {"url": wheel.as_uri(), "archive_info": {}})
    assert install_hint("cluster") == f"pip install '{wheel}[cluster]'"
    wheel.unlink()
    assert install_hint("cluster") == "pip install 'breadcrumb-memory[cluster]'"


def test_a_git_url_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    installed(monkeypatch, {"url": "https://example.org/acme/breadcrumb.git",
                            "vcs_info": {"vcs": "git", "commit_id": "b3bb3b2"}})
    assert install_hint("llm") == (
        "pip install 'breadcrumb-memory[llm] @ git+https://example.org/acme/breadcrumb.git'")
    installed(monkeypatch, {"url": "file:///srv/breadcrumb", "vcs_info": {"vcs": "git"}})
    assert install_hint("llm") == (
        "pip install 'breadcrumb-memory[llm] @ git+file://localhost/srv/breadcrumb'")


def test_an_index_install_gets_the_index_line(monkeypatch: pytest.MonkeyPatch) -> None:
    installed(monkeypatch, None)
    assert install_hint("eval") == "pip install 'breadcrumb-memory[eval]'"
    exc = ModuleNotFoundError("No module named 'uvicorn'", name="uvicorn")
    assert missing_extra(exc) == ("this needs the 'server' extra (module 'uvicorn' is "
                                  "missing): pip install 'breadcrumb-memory[server]'")
