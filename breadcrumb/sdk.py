"""The Python SDK's public name: ``from breadcrumb.sdk import Breadcrumb``.

The code lives in :mod:`breadcrumb.clients.sdk` (with the publishers and the other clients
of the service, issue 48 part 2); this module keeps the import path the README, the docs
and users' code name. Importing it loads what the SDK loads, nothing more (standard
library, httpx, pydantic).
"""

from __future__ import annotations

from breadcrumb.clients.sdk import (
    AddResult,
    AsyncBreadcrumb,
    Backoff,
    Breadcrumb,
    BreadcrumbError,
    Evidence,
    HttpPublisher,
    IndexCounters,
    InvalidEventError,
    Memory,
    Publisher,
    PublishError,
    PublishReceipt,
    RecallResult,
    Rejected,
    SourceRange,
    SyncPublisher,
    checked,
    plainly_valid,
)

__all__ = ["AddResult", "AsyncBreadcrumb", "Backoff", "Breadcrumb", "BreadcrumbError",
           "Evidence", "HttpPublisher", "IndexCounters", "InvalidEventError", "Memory",
           "PublishError", "PublishReceipt", "Publisher", "RecallResult", "Rejected",
           "SourceRange", "SyncPublisher", "checked", "plainly_valid"]
