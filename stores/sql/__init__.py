"""SQL stores: SQLite (embedded) and MySQL/TiDB (cluster). One store object per database
hands out one object per table group (:mod:`stores.sql.base`), each typed by its port in
:mod:`stores.ports.tables`; the schema, browsing, erasure and the lifecycle tables."""
