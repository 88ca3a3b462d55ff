"""Erasure in a SQL store (issue 26), one concept in one room: what a forget deletes and
audits (``erasure``: the scope's plan, the deletes, the erasure audit) and the tombstones
that keep it forgotten (``tombstones``: read by intake and by the processors)."""
