"""infra/docker-compose.yml kept true to the code (issue 30): the services a deployment
needs, every ``BREADCRUMB_*`` variable a field of :class:`Settings` whose value validates,
every address pointing at a service of the file on the port that service listens on, the
commands parseable by the CLI, and nothing published beyond loopback."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from breadcrumb.cli import build_parser
from breadcrumb.settings import Settings

ROOT = Path(__file__).resolve().parents[3]
COMPOSE = ROOT / "infra" / "docker-compose.yml"
#: the port each infrastructure service listens on inside the compose network
LISTENS = {"kafka": 9092, "mysql": 3306, "tidb": 4000, "qdrant": 6333, "minio": 9000}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def _resolved(value: Any) -> str:
    """``${NAME:-default}`` → ``default`` (what compose uses with nothing set)."""
    return re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", str(value))


def _env(service: dict[str, Any]) -> dict[str, str]:
    return {k: _resolved(v) for k, v in (service.get("environment") or {}).items()}


def _breadcrumb_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in compose["services"].items()
            if any(k.startswith("BREADCRUMB_") for k in (svc.get("environment") or {}))
            and svc.get("image") == "breadcrumb:local"}


def test_the_deployment_has_its_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"kafka", "qdrant", "minio", "worker", "api"} <= set(services)
    assert {"mysql", "tidb"} & set(services)
    worker = services["worker"]
    assert worker["command"] == ["breadcrumb", "worker"]
    assert worker.get("deploy", {}).get("replicas", 1) >= 2  # a worker group
    assert services["api"]["command"][:2] == ["breadcrumb", "serve"]


def test_every_setting_is_a_field_and_validates(compose: dict[str, Any]) -> None:
    fields = set(Settings.model_fields)
    services = _breadcrumb_services(compose)
    assert {"worker", "api", "init"} <= set(services)
    for name, service in services.items():
        env = _env(service)
        values = {}
        for key, value in env.items():
            if not key.startswith("BREADCRUMB_"):
                continue
            field = key.removeprefix("BREADCRUMB_").lower()
            assert field in fields, f"{name}: {key} is not a setting of breadcrumb/settings.py"
            values[field] = value
        settings = Settings(**values)  # type: ignore[arg-type]  # strings, as from the env
        assert settings.mode == "cluster", name
        assert settings.qdrant_url, f"{name}: the compose deployment runs a Qdrant server"
        assert settings.vector_store == "qdrant", name  # every worker writes the server


def test_every_address_names_a_service_on_its_port(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in _breadcrumb_services(compose).items():
        settings = Settings(**{k.removeprefix("BREADCRUMB_").lower(): v  # type: ignore[arg-type]
                               for k, v in _env(service).items() if k.startswith("BREADCRUMB_")})
        addresses = [(h.split(":")[0], int(h.split(":")[1]))
                     for h in settings.kafka_bootstrap.split(",")]
        addresses.append((settings.mysql_host, settings.mysql_port))
        for url in (settings.qdrant_url, settings.s3_endpoint):
            assert url
            parts = urlsplit(url)
            assert parts.hostname and parts.port
            addresses.append((parts.hostname, parts.port))
        for host, port in addresses:
            assert host in services, f"{name}: {host} is not a service of the compose file"
            assert LISTENS.get(host) == port, f"{name}: {host} listens on {LISTENS.get(host)}"
            if name == "init":  # the one-shot only declares topics and the bucket
                continue
            depends = service.get("depends_on") or {}
            assert host in depends or any(host in (services[d].get("depends_on") or {})
                                          for d in depends), f"{name} does not wait for {host}"
    kafka = _env(services["kafka"])
    assert f":{LISTENS['kafka']}" in kafka["KAFKA_LISTENERS"]
    assert kafka["KAFKA_ADVERTISED_LISTENERS"].endswith(f"kafka:{LISTENS['kafka']}")


def test_the_commands_parse_and_the_api_port_is_published_on_loopback_only(
        compose: dict[str, Any]) -> None:
    parser = build_parser()
    services = compose["services"]
    for name in ("worker", "api"):
        args = parser.parse_args(services[name]["command"][1:])
        assert args.command == services[name]["command"][1]
    api = services["api"]
    args = parser.parse_args(api["command"][1:])
    env = _env(api)
    assert str(args.port) == env["BREADCRUMB_PORT"]
    for name, service in services.items():
        for mapping in service.get("ports") or []:
            host_ip, _, rest = str(mapping).partition(":")
            assert host_ip == "127.0.0.1", f"{name} publishes {mapping} beyond loopback"
            assert rest.split(":")[-1] == env["BREADCRUMB_PORT"] or name != "api"
    assert not services["worker"].get("ports"), "the worker's web server stays in its container"


def test_the_image_copies_what_exists(compose: dict[str, Any]) -> None:
    dockerfile = compose["x-breadcrumb-app"]["build"]["dockerfile_inline"]
    for line in dockerfile.splitlines():
        line = line.strip()
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
