"""``breadcrumb eval``: Breadcrumb against raw search and summary-only memory.

The harness feeds the golden agent history (and LoCoMo conversations) through the
public runtime (``infra.bootstrap.build_runtime``, ``gateway.submit`` /
``wait_processed``, ``recall.recall``), asks every labelled question of three methods
and writes a Markdown + PNG + JSON report.
"""
