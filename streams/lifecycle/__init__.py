"""The lifecycle: supersession on ingest, the tier sweeper, manual changes (``service``), their
reads and writes through a derivation batch, the changelog ports and the runners outside the
ingest path."""
