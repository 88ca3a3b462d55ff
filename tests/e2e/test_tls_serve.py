"""``breadcrumb serve --ssl-certfile/--ssl-keyfile`` serves HTTPS (a real process, a
self-signed certificate made with openssl for 127.0.0.1)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, wait_until
from tests.support.serve import free_port


def _certificate(folder: Path) -> tuple[Path, Path]:
    if not shutil.which("openssl"):
        pytest.fail("openssl is needed to make a test certificate (apt-get install openssl)")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def test_serve_https(tmp_path: Path) -> None:
    cert, key = _certificate(tmp_path)
    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "breadcrumb.cli", "serve", "--port", str(port), "--data-dir",
         str(tmp_path / "data"), "--embedder", "hash", "--ssl-certfile", str(cert),
         "--ssl-keyfile", str(key)], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    url = f"https://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return httpx.get(f"{url}/healthz", verify=str(cert), timeout=1).status_code == 200
        except httpx.HTTPError:
            return proc.poll() is not None

    try:
        wait_until(up, timeout=60)
        assert proc.poll() is None, (tmp_path / "serve.log").read_text(errors="replace")
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).raise_for_status()
        with pytest.raises(httpx.ConnectError):  # not trusted without the certificate
            httpx.get(f"{url}/healthz", timeout=2)
        env = {**os.environ, "SSL_CERT_FILE": str(cert)}
        stats = subprocess.run(
            [sys.executable, "-m", "breadcrumb.cli", "recall", "anything", "--user", "u",
             "--url", url, "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
            timeout=120)
        assert stats.returncode == 0, stats.stderr
        marker = (tmp_path / "data" / "server.json").read_text()
        assert f'"url":"https://127.0.0.1:{port}"' in marker
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
