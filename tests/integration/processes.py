"""The cluster quick start as processes: ``breadcrumb worker`` and ``breadcrumb serve``
started the way docs/cluster.md says, configured only by ``BREADCRUMB_*`` variables, and
what they listen on (read from /proc, no extra dependency)."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from pathlib import Path

from tests.integration.conftest import stop_worker as stop  # noqa: F401 - one stop for every process

REPO = Path(__file__).resolve().parents[2]


def breadcrumb_command() -> list[str]:
    """The installed ``breadcrumb`` script next to this Python, else ``python -m``."""
    script = Path(sys.executable).parent / "breadcrumb"
    return [str(script)] if script.exists() else [sys.executable, "-m", "breadcrumb.cli"]


def isolated_env(tag: str, database: str, port: int, **extra: str) -> dict[str, str]:
    """The quick start's environment, isolated from other runs on the shared services by
    topic prefix, consumer group and database (and the hash embedder: no model load)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BREADCRUMB_")}
    env.update({"PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO),
                "BREADCRUMB_MODE": "cluster", "BREADCRUMB_TOPIC_PREFIX": f"{tag}-",
                "BREADCRUMB_WORKER_ID": f"{tag}-worker", "BREADCRUMB_MYSQL_DATABASE": database,
                "BREADCRUMB_PORT": str(port), "BREADCRUMB_EMBEDDER": "hash",
                "BREADCRUMB_IDLE_FLUSH_SECONDS": "3"})
    env.update(extra)
    return env


def start(args: list[str], env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*breadcrumb_command(), *args], env=env, cwd=cwd,
                            stdout=log.open("ab"), stderr=subprocess.STDOUT)


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def _address(hex_ip: str) -> str:
    raw = bytes.fromhex(hex_ip)
    # /proc/net prints each 32-bit word in host (little-endian) order
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def listening(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every socket process ``pid`` listens on: TCP in LISTEN, UDP
    bound and unconnected (anyone could send to it)."""
    inodes = _socket_inodes(pid)
    found = []
    for table, open_state in (("tcp", "0A"), ("tcp6", "0A"), ("udp", "07"), ("udp6", "07")):
        path = Path("/proc/net") / table
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
            unconnected = remote.split(":")[1] == "0000"
            if state == open_state and inode in inodes and (table.startswith("tcp")
                                                            or unconnected):
                ip, port = local.split(":")
                found.append((_address(ip), int(port, 16)))
    return sorted(found)


def beyond_loopback(sockets: list[tuple[str, int]]) -> list[tuple[str, int]]:
    return [(ip, port) for ip, port in sockets if not ipaddress.ip_address(ip).is_loopback]
