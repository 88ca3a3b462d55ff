"""Versioned generations of the derived stores (embedded and cluster) and their alias."""
