"""Embedded mode's streams: the durable SQLite event log and the thread that drains it
(``runner``), its fair schedule by tenant, and replay of the log into a generation."""
