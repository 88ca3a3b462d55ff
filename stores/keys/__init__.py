"""API keys: hashed bearer keys bound to a tenant and a role, in SQL."""
