"""Unit tests of the store adapters."""
