"""Qdrant Edge (qdrant-edge-py), the embedded mode's vector index: the index (``index``),
its shard format (``format``), lexical post-filtering (``postfilter``), HNSW builds off the
service (``rebuild``, ``index_build``, run in a child process) and when to run them
(``maintenance``), its reader/writer lock (``rw_lock``), and one shard set per collection
prefix for cluster mode without a Qdrant server (``collections``)."""
