"""Helpers shared by tests (no test functions here)."""
