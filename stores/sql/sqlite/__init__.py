"""The embedded default's SQL store: one SQLite file (:mod:`.store`), its database
(:mod:`.database`: the write connection, the readers of :mod:`.readers`, the listeners of
the rows kept in memory) and the table objects that keep rows (:mod:`.events`,
:mod:`.memories`, :mod:`.states`)."""
