"""OpenAIEmbedder against a local stub of an OpenAI-compatible server (any model size).

The stub is a real HTTP server in a thread; it answers ``/v1/embeddings`` with vectors
of the size it was started with and records every request body.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.infra.bootstrap import build_embedder
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import EmbeddingError, OpenAIEmbedder


class Stub:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.bodies: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                stub.bodies.append(body)
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [{"object": "embedding", "index": i,
                         "embedding": [float(len(t) + i + 1)] + [0.5] * (stub.dim - 1)}
                        for i, t in enumerate(texts)]
                answer = json.dumps({"object": "list", "data": data, "model": body["model"],
                                     "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture()
def stub() -> Iterator[Stub]:
    server = Stub(dim=1024)
    yield server
    server.server.shutdown()


def test_the_size_comes_from_the_first_answer(stub: Stub) -> None:
    remote = OpenAIEmbedder(stub.url, "k", "bge-large")
    vectors = remote.embed_passages(["alpha", "beta"])
    assert remote.dim == 1024 and [len(v) for v in vectors] == [1024, 1024]
    assert len(stub.bodies) == 1  # no probe: the answer told the size


def test_asking_the_size_first_sends_one_probe(stub: Stub) -> None:
    remote = OpenAIEmbedder(stub.url, "k", "bge-large")
    assert remote.dim == 1024 and len(stub.bodies) == 1
    assert len(remote.embed_query("q")) == 1024 and len(stub.bodies) == 2


def test_input_type_is_sent_only_when_configured(stub: Stub) -> None:
    OpenAIEmbedder(stub.url, "k", "m").embed_query("q")
    OpenAIEmbedder(stub.url, "k", "m", input_types=("search_query", "search_document")
                   ).embed_passages(["p"])
    assert "input_type" not in stub.bodies[0]
    assert stub.bodies[1]["input_type"] == "search_document"


def test_a_configured_size_is_checked(stub: Stub) -> None:
    with pytest.raises(EmbeddingError, match="got dim 1024, expected 384"):
        OpenAIEmbedder(stub.url, "k", "m", 384).embed_query("q")


def test_settings_build_it(stub: Stub, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, embedder="openai", openai_base_url=stub.url,
                        embed_model="mxbai", embed_input_type="query,passage")
    embedder = build_embedder(settings)
    assert embedder.dim == 1024 and stub.bodies[-1]["input_type"] == "query"
    fixed = build_embedder(settings.with_overrides(embed_dim=1024))
    assert fixed.dim == 1024 and len(stub.bodies) == 1  # a configured size needs no probe
    with pytest.raises(ValueError, match="QUERY,PASSAGE"):
        build_embedder(settings.with_overrides(embed_input_type="query"))
