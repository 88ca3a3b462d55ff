"""Reading JSON Lines input: every line parsed, or reported with its number and text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


def read_records(path: Path) -> tuple[list[tuple[int, Any]], list[dict[str, Any]]]:
    """(line number, value) of every JSON line, and the unparsable lines (never dropped
    silently: each keeps its number, the parser's reason and the text)."""
    records: list[tuple[int, Any]] = []
    bad: list[dict[str, Any]] = []
    with path.open("rb") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                records.append((number, orjson.loads(line)))
            except orjson.JSONDecodeError as exc:
                bad.append({"line": number, "error": f"not JSON: {exc}",
                            "payload": line.decode("utf-8", "replace")})
    return records, bad
