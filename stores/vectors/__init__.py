"""Vector indexes, one room per backend: ``edge/`` (Qdrant Edge, the embedded mode's),
``server/`` (qdrant-client: a Qdrant server in cluster mode, or local mode), ``sink/`` (the
``vectors`` topic and its sink); what the two Qdrant backends share stays here
(``qdrant_common``: layout, payloads, filters; ``search_batch``: batched searches, which
recall imports too)."""
