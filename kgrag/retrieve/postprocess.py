"""What happens to hits after ranking: fused ids read into hits, dropping overlapping children
and parent expansion (the abstention gate is ``kgrag.retrieve.abstain``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kgrag.retrieve.fusion import Fused
from kgrag.retrieve.types import Exclusion, Hit
from kgrag.stores.base import ChunkIndex
from kgrag.stores.filters import SearchFilter
from kgrag.types import Chunk, GraphPath


def fused_hits(head: Sequence[Fused], evidence: dict[str, list[GraphPath]], get: Callable[[list[str]], list[Chunk]],
               filters: SearchFilter | None, exclusion: Exclusion | None = None) -> list[Hit]:
    """Fused ids → Hits with their chunks (``get``: ids → the chunks the index holds);
    ``filters.matches`` drops the graph's hits the stores' filtered searches would not have
    returned (the graph holds no chunk metadata), ``exclusion`` what is about an excluded topic."""
    chunks = {c.id: c for c in get([item.chunk_id for item in head])}
    banned = set() if exclusion is None else exclusion.excluded_ids(list(chunks), lambda ids: [chunks[i] for i in ids])
    hits: list[Hit] = []
    for item in head:
        chunk = chunks.get(item.chunk_id)
        if chunk is None or (filters is not None and not filters.matches(chunk)):
            continue  # graph evidence for a chunk the index no longer has, or filtered out
        if exclusion is not None and chunk.id in banned:
            continue  # an evidence-set page about an excluded topic
        hits.append(
            Hit(chunk, item.score, item.ranks, fused_rank=len(hits) + 1, fused_score=item.score,
                graph_paths=evidence.get(item.chunk_id, []), placed_by=item.placed_by)
        )
    return hits


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
