"""Kafka TLS / SASL settings become aiokafka and Faust arguments (PLAINTEXT: none at all)."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import faust
import pytest

from breadcrumb.settings import Settings
from breadcrumb.topics.kafka_security import aiokafka_kwargs, faust_credentials


def _ca(folder: Path) -> Path:
    if not shutil.which("openssl"):
        pytest.fail("openssl is needed to make a test CA (apt-get install openssl)")
    cert = folder / "ca.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=test-ca", "-keyout", str(folder / "ca.key"), "-out",
                    str(cert)], check=True, capture_output=True, timeout=60)
    return cert


def test_plaintext_changes_nothing() -> None:
    assert aiokafka_kwargs(Settings()) == {}
    assert faust_credentials(Settings()) is None


def test_sasl_ssl(tmp_path: Path) -> None:
    settings = Settings(kafka_security_protocol="SASL_SSL", kafka_ssl_cafile=_ca(tmp_path),
                        kafka_sasl_mechanism="SCRAM-SHA-512", kafka_sasl_username="svc",
                        kafka_sasl_password="s3cret")
    kwargs = aiokafka_kwargs(settings)
    assert kwargs["security_protocol"] == "SASL_SSL"
    assert isinstance(kwargs["ssl_context"], ssl.SSLContext)
    assert kwargs["ssl_context"].verify_mode == ssl.CERT_REQUIRED
    assert (kwargs["sasl_mechanism"], kwargs["sasl_plain_username"],
            kwargs["sasl_plain_password"]) == ("SCRAM-SHA-512", "svc", "s3cret")
    credentials = faust_credentials(settings)
    assert isinstance(credentials, faust.SASLCredentials)
    assert credentials.username == "svc" and credentials.ssl_context is not None
    assert "s3cret" not in repr(settings)


def test_ssl_only(tmp_path: Path) -> None:
    settings = Settings(kafka_security_protocol="SSL", kafka_ssl_cafile=_ca(tmp_path))
    assert set(aiokafka_kwargs(settings)) == {"security_protocol", "ssl_context"}
    assert isinstance(faust_credentials(settings), faust.SSLCredentials)
