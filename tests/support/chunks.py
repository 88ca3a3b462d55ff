"""Chunks of one event cut from consecutive texts, for processors' unit tests."""

from __future__ import annotations

from breadcrumb.topics.records import Chunk


def chunks(event: str, texts: list[str]) -> list[Chunk]:
    """One chunk per text of event ``event`` (memory ``m``, tenant ``u``, thread ``t``),
    char offsets running on; tokens counted as words."""
    out, pos = [], 0
    for text in texts:
        out.append(Chunk(id=f"{event}-{pos}", memory_id="m", user_id="u", project_id=None,
                         thread_id="t", event_id=event, event_index=0, char_start=pos,
                         char_end=pos + len(text), text=text, tokens=len(text.split())))
        pos += len(text)
    return out
