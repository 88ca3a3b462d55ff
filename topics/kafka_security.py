"""How Kafka clients authenticate and encrypt: settings → aiokafka / Faust arguments.

``kafka_security_protocol`` is ``PLAINTEXT`` (the default: no arguments at all, so nothing
changes), ``SSL``, ``SASL_PLAINTEXT`` or ``SASL_SSL``. TLS uses ``kafka_ssl_cafile`` (and,
for mutual TLS, ``kafka_ssl_certfile`` / ``kafka_ssl_keyfile``); SASL uses
``kafka_sasl_mechanism`` (``PLAIN``, ``SCRAM-SHA-256``, ``SCRAM-SHA-512``) with
``kafka_sasl_username`` / ``kafka_sasl_password``. Every aiokafka producer, consumer and
admin client of the gateway, worker and replay takes :func:`aiokafka_kwargs`; the Faust
app takes :func:`faust_credentials`.
"""

from __future__ import annotations

import ssl
from typing import Any


def _ssl_context(settings: Any) -> ssl.SSLContext:
    from aiokafka.helpers import create_ssl_context

    def path(value: Any) -> str | None:
        return str(value) if value else None

    context: ssl.SSLContext = create_ssl_context(
        cafile=path(settings.kafka_ssl_cafile), certfile=path(settings.kafka_ssl_certfile),
        keyfile=path(settings.kafka_ssl_keyfile))
    return context


def _password(settings: Any) -> str | None:
    secret = settings.kafka_sasl_password
    return secret.get_secret_value() if secret is not None else None


def aiokafka_kwargs(settings: Any) -> dict[str, Any]:
    """Keyword arguments for ``AIOKafkaProducer`` / ``AIOKafkaConsumer`` / admin clients."""
    protocol = getattr(settings, "kafka_security_protocol", "PLAINTEXT")
    if protocol == "PLAINTEXT":
        return {}
    kwargs: dict[str, Any] = {"security_protocol": protocol}
    if protocol.endswith("SSL"):
        kwargs["ssl_context"] = _ssl_context(settings)
    if protocol.startswith("SASL"):
        kwargs.update(sasl_mechanism=settings.kafka_sasl_mechanism,
                      sasl_plain_username=settings.kafka_sasl_username,
                      sasl_plain_password=_password(settings))
    return kwargs


def faust_credentials(settings: Any) -> Any:
    """``broker_credentials`` for ``faust.App`` (None for PLAINTEXT)."""
    import faust

    protocol = getattr(settings, "kafka_security_protocol", "PLAINTEXT")
    if protocol == "PLAINTEXT":
        return None
    context = _ssl_context(settings) if protocol.endswith("SSL") else None
    if protocol.startswith("SASL"):
        return faust.SASLCredentials(username=settings.kafka_sasl_username,
                                     password=_password(settings), ssl_context=context,
                                     mechanism=settings.kafka_sasl_mechanism)
    return faust.SSLCredentials(context)


async def started(client: Any) -> Any:
    """``await client.start()`` and the client; one that fails to start (the cluster down, a
    refused login) is stopped before the error goes on: aiokafka logs an "Unclosed
    AIOKafkaProducer" traceback when it collects a producer that was never stopped, in
    whatever process and test happens to collect it then."""
    try:
        await client.start()
    except BaseException:
        await client.stop()
        raise
    return client
