"""The Qdrant server backend (qdrant-client): cluster mode's vector index (``index``)."""
