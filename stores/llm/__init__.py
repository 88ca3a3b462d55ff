"""The chat port and the LLM adapters (observer, recall's Decide and quoter)."""
