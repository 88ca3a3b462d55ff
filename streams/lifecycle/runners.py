"""The lifecycle's runners outside the ingest path: the ``memory-status`` topic publisher
(cluster mode) and the periodic sweeper thread (moved out of ``streams.lifecycle.service``)."""

from __future__ import annotations

import json
import logging
import threading
from typing import TYPE_CHECKING, Any

from breadcrumb.topics.loops import run_on

if TYPE_CHECKING:
    from breadcrumb.streams.lifecycle.service import LifecycleService

log = logging.getLogger(__name__)


class KafkaChangelog:
    """Publishes to the compacted ``memory-status`` topic (acks=all, idempotent) from sync
    code: aiokafka runs on a private event-loop thread. ``start()`` before use."""

    def __init__(self, bootstrap: str, topic: str,
                 security: dict[str, Any] | None = None) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.security = security or {}  # topics/kafka_security.aiokafka_kwargs
        self._loop: Any = None
        self._producer: Any = None

    def start(self) -> None:
        import asyncio

        from aiokafka import AIOKafkaProducer

        from breadcrumb.topics.kafka_security import started

        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, name="memory-status", daemon=True).start()

        async def make() -> Any:
            return await started(AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all",
                                                  enable_idempotence=True, **self.security))

        self._producer = self._call(make())

    def _call(self, coro: Any) -> Any:
        return run_on(self._loop, coro, 60)

    def publish(self, memory_id: str, user_id: str, value: dict[str, Any] | None) -> None:
        data = None if value is None else json.dumps(value, ensure_ascii=False).encode()
        self._call(self._producer.send_and_wait(self.topic, key=memory_id.encode(), value=data))

    def stop(self) -> None:
        if self._loop is None:
            return
        self._call(self._producer.stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._loop = None


class Sweeper:
    """Runs ``LifecycleService.sweep`` every ``interval`` seconds on a daemon thread."""

    def __init__(self, service: LifecycleService, interval: float) -> None:
        self.service = service
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.runs = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="lifecycle-sweeper", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.service.sweep()
                self.runs += 1
            except Exception:  # keep sweeping, but loudly and counted
                self.service.errors["sweep_failed"] += 1
                log.exception("lifecycle sweep failed")
