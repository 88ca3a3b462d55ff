"""topics package."""
