"""Topic declarations: names, partitions and cleanup policy. Declares; does not administer."""

from __future__ import annotations

from dataclasses import dataclass, field

AGENT_EVENTS = "agent-events"
DEAD_LETTERS = "agent-events-dlq"
OBSERVATIONS = "observations"
MEMORY_STATUS = "memory-status"
#: Issue 14: the workers' vector writes, keyed by point, applied by one sink (compacted).
VECTORS = "vectors"


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """What a topic is: its name, partition count and Kafka configs."""

    name: str
    partitions: int
    compacted: bool = False
    configs: dict[str, str] = field(default_factory=dict)

    def kafka_configs(self) -> dict[str, str]:
        base = {"cleanup.policy": "compact" if self.compacted else "delete"}
        if not self.compacted:
            base["retention.ms"] = "-1"  # the event log is the source of truth: keep it
        return {**base, **self.configs}


def topic_specs(prefix: str = "", partitions: int = 3) -> list[TopicSpec]:
    """Every topic Breadcrumb owns. ``agent-events`` is keyed ``{user_id}/{thread_id}``."""
    return [
        TopicSpec(prefix + AGENT_EVENTS, partitions),
        TopicSpec(prefix + DEAD_LETTERS, 1),
        TopicSpec(prefix + OBSERVATIONS, partitions),
        TopicSpec(prefix + MEMORY_STATUS, partitions, compacted=True),
        TopicSpec(prefix + VECTORS, 1, compacted=True),  # one partition: one ordered sink
    ]
