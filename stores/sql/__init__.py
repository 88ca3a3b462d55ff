"""SQL stores: SQLite (embedded) and MySQL/TiDB (cluster), composed of one mixin per
aggregate; the schema, browsing, erasure and the lifecycle tables."""
