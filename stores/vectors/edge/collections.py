"""Qdrant Edge shards per collection prefix: the vector store ``serve`` keeps in cluster mode
when no Qdrant server is configured (``VECTOR_STORE=topic`` without ``QDRANT_URL``).

Before, that store was qdrant-client's local mode: pure Python, a scan of every point per
query (the cluster soak: 57 % of ``serve``'s samples in its sparse dot products, recall p50
5.8 s at 22k chunks) and its points held as Python objects. Qdrant Edge is the engine the
embedded mode runs: the same :class:`~.index.QdrantEdgeIndex`, one directory per
collection prefix under ``root`` (a replay's generation ``breadcrumb__G1`` fills
``root/breadcrumb__G1``, never main's), so :meth:`sibling` and :meth:`drop` work as the
cluster's generations expect of a store (``infra/cluster_generations.py``).

Each root also holds ``store-id``: a random id written when the root is created. The vector
sink's consumer group names it (``infra/cluster.py``), so a new or emptied store reads the
compacted ``vectors`` topic from its beginning and rebuilds itself, where a group that had
committed offsets would have resumed after them and left it empty.
"""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path

from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex

_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
STORE_ID = "store-id"


def store_id(root: Path) -> str:
    """The id of the store under ``root`` (written on first use)."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / STORE_ID
    if not path.exists():
        tmp = root / f"{STORE_ID}.tmp"
        tmp.write_text(uuid.uuid4().hex[:16])
        tmp.replace(path)
    return path.read_text().strip()


class EdgeCollections(QdrantEdgeIndex):
    """A :class:`QdrantEdgeIndex` at ``root/prefix``, with siblings for other prefixes.

    Why so many methods: it is a QdrantEdgeIndex (whose reason its docstring gives) plus
    the prefix, its siblings and the store id the sink's consumer group is named by.
    """

    def __init__(self, root: Path, prefix: str, dim: int) -> None:
        if not _PREFIX.match(prefix) or prefix in (".", ".."):
            raise ValueError(f"collection prefix {prefix!r} is not a directory name "
                             "(letters, digits, _ . -)")
        super().__init__(Path(root) / prefix, dim)
        self.root, self._prefix = Path(root), prefix

    @property
    def prefix(self) -> str:
        """The collection prefix this index holds."""
        return self._prefix

    def sibling(self, prefix: str) -> EdgeCollections:
        """The collections of another prefix (a generation) under the same root."""
        return EdgeCollections(self.root, prefix, self._dim)

    def drop(self) -> None:
        """Delete this prefix's collections (removing an old generation)."""
        self.close()
        shutil.rmtree(self._path, ignore_errors=True)
