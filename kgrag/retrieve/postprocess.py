"""What happens to hits after ranking: dropping overlapping children and parent expansion
(the abstention gate is ``kgrag.retrieve.abstain``)."""

from __future__ import annotations

from collections.abc import Sequence

from kgrag.retrieve.types import Hit
from kgrag.stores.base import ChunkIndex


def drop_overlapping(hits: list[Hit]) -> list[Hit]:
    """Keep the better of two hits whose spans overlap in one document (sliding-window
    children repeat their overlap: the reader would see the same sentences twice)."""
    kept: list[Hit] = []
    spans: dict[str, list[tuple[int, int]]] = {}
    for hit in hits:
        c = hit.chunk
        taken = spans.setdefault(c.doc_id, [])
        if c.end > c.start and any(c.start < e and s < c.end for s, e in taken):
            continue
        taken.append((c.start, c.end))
        kept.append(hit)
    return kept


def expand_parents(index: ChunkIndex, hits: Sequence[Hit]) -> None:
    """Attach each child's parent chunk: the child was specific enough to be found, the parent
    carries the context generation needs."""
    wanted = list(dict.fromkeys(h.chunk.parent_id for h in hits if h.chunk.parent_id))
    if not wanted:
        return
    parents = {p.id: p for p in index.get(wanted)}
    for hit in hits:
        if hit.chunk.parent_id:
            hit.parent = parents.get(hit.chunk.parent_id)
