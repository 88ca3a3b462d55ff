"""Vector indexes: Qdrant Edge (embedded), Qdrant server (cluster), their shared code,
and the vectors topic with its sink."""
