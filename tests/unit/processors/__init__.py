"""Unit tests of the pure processors."""
