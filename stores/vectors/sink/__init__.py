"""Vectors carried on the compacted ``vectors`` topic and written by one sink (``topic``)."""
