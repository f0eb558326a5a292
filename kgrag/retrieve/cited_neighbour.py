"""A follow-up that asks for a neighbour by position ("And the next one?", "the level above
that"), answered from what the last turn cited.

The carried question finds the *topic* again, but not the place: the previous question's best
fused hit is often a sibling section ("What is the prefix for Group
Channels in Slack?" → the support page's "spt vs support prefix"), and the neighbour of the
wrong section is wrong. The chunk the last answer cited is the place the user means. So, when
the turn before names it (``Turn.cited``: the answer's citations, or the hit a retrieval showed
first), the hits open with that chunk — the next row of its table or item of its list is
usually in it — followed by its neighbour in reading order in the direction asked: the first
chunk of the next section (``after``), or of the section before (``before``); with no section
structure, or where the cited chunk's table runs on past it (a long table is cut into several
chunks), the adjacent chunk. A direction the question does not give ("the last one") places
the cited chunk only.

Neighbours are found by the chunker's numbering (``kgrag.types.child_chunk_id``: a document's
searchable chunks are numbered 0, 1, 2 … in reading order), so no store needs a new query.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import takewhile

from kgrag.retrieve.tuning import RANKING
from kgrag.retrieve.types import Completion, Hit
from kgrag.stores.filters import SearchFilter
from kgrag.types import Chunk, child_chunk_id

PREVIOUS_ANSWER = "previous_answer"
NEIGHBOUR = "position"

GetChunks = Callable[[list[str]], list[Chunk]]


def neighbour(anchor: Chunk, direction: str, get: GetChunks) -> Chunk | None:
    """The chunk ``direction`` ("after" | "before") of ``anchor`` in its document's reading
    order: the adjacent chunk where a table runs on into it (``_table_goes_on``); else the first
    chunk of the adjacent section when the document has sections, else the adjacent chunk; None
    at the document's edge or for a chunk the chunker did not number."""
    if anchor.is_parent or anchor.id != child_chunk_id(anchor.doc_id, anchor.ordinal):
        return None
    step = 1 if direction == "after" else -1
    ordinals = [anchor.ordinal + step * j for j in range(1, RANKING.neighbour_scan + 1)]
    ids = [child_chunk_id(anchor.doc_id, i) for i in ordinals if i >= 0]
    found = {c.id: c for c in get(ids)}
    run: list[Chunk] = []
    for cid in ids:  # in reading order away from it, up to the first gap
        if cid not in found:
            break
        run.append(found[cid])
    if not run:
        return None
    if _table_goes_on(anchor, run[0], step):
        return run[0]
    other = next((j for j, c in enumerate(run) if c.section_path != anchor.section_path), None)
    if other is None:
        return run[0] if not anchor.section_path else None
    if step == 1:
        return run[other]
    # Before: the first chunk of the previous section (where its heading is), its farthest one back.
    section = run[other].section_path
    return list(takewhile(lambda c: c.section_path == section, run[other:]))[-1]


def _table_goes_on(anchor: Chunk, adjacent: Chunk, step: int) -> bool:
    """Whether a table runs from one of the two chunks into the other: the later one opens
    inside a table below its header (``Chunk.table_header_cells``), in the same section. Then the
    row next to the cited one may be the adjacent chunk's, not the next section's."""
    later = adjacent if step == 1 else anchor
    return bool(later.table_header_cells) and adjacent.section_path == anchor.section_path


def place_cited(hits: Sequence[Hit], anchor: Chunk, near: Chunk | None, direction: str | None) -> list[Hit]:
    """``hits`` opened with the cited chunk and its neighbour (each taken out of where fusion
    put it, or added), the rest after them in their order. Each placed hit says why."""
    by_id = {h.chunk.id: h for h in hits}
    placed: list[Hit] = []
    for chunk, rule in ((anchor, PREVIOUS_ANSWER), (near, NEIGHBOUR)):
        if chunk is None or any(h.chunk.id == chunk.id for h in placed):
            continue
        hit = by_id.get(chunk.id) or Hit(chunk, 0.0)
        hit.placed_by = {"rule": rule, "anchor": anchor.id, **({"direction": direction} if rule == NEIGHBOUR else {})}
        placed.append(hit)
    taken = {h.chunk.id for h in placed}
    return [*placed, *(h for h in hits if h.chunk.id not in taken)]


def open_with_cited(completion: Completion, hits: list[Hit], get: GetChunks,
                    filters: SearchFilter | None) -> list[Hit]:
    """``hits`` for a positional follow-up whose last turn cited chunks (``completion.anchor``):
    opened with the first cited chunk and its neighbour ``completion.direction``; unchanged,
    with ``completion.position_note`` saying why, when the cited chunk is gone or filtered out.
    The cited chunk's neighbour is placed only where the filters let it through."""
    found = get(list(completion.anchor[:1]))
    if not found:
        completion.position_note = f"the cited chunk {completion.anchor[0]} is no longer in the knowledge base"
        return hits
    anchor = found[0]
    if filters is not None and not filters.matches(anchor):
        completion.position_note = "the cited chunk is outside this question's filters"
        return hits
    near = neighbour(anchor, completion.direction, get) if completion.direction else None
    if near is not None and filters is not None and not filters.matches(near):
        near = None
    if completion.direction and near is None:
        completion.position_note = f"no section {completion.direction} the cited chunk in its document"
    return place_cited(hits, anchor, near, completion.direction)
