"""Golden test corpus: a deterministic multi-day agent history with planted exact values."""
