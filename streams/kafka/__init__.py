"""Cluster mode's streams: the Faust app and its ingest agent (one message or a micro-batch),
the Kafka gateway behind ``POST /v1/events``, decoded messages, which thread keys a worker
owns, replay into a new generation, and erasure's rewrite of the Kafka log."""
