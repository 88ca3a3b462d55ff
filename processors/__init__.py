"""processors package."""
