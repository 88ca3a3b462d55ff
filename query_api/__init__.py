"""query_api package."""
