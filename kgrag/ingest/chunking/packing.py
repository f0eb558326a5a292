"""Pack atoms into chunks of at most ``limit`` units, ending each at the best boundary in reach.

"Best" is the strongest boundary (heading > definition > blank line > line > sentence > clause
> word) among those that leave the chunk at least half full; structural boundaries (headings,
definitions) win even below half, so a section is never glued to the end of the previous one
just to fill space. Ties go to the latest boundary, which keeps chunks full.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgrag.ingest.chunking.atoms import Atom, Count, tail_start
from kgrag.ingest.chunking.structure import STRUCTURAL


@dataclass(frozen=True)
class Span:
    first: int  # index of the first atom that starts inside this chunk
    last: int  # index after the last atom
    start: int  # character offset; before atoms[first].start when the chunk opens with overlap
    end: int


def _best_break(atoms: list[Atom], i: int, j: int, limit: int, carried: int) -> int:
    """Break before atom k (i < k <= j), where atom j is the first that did not fit."""
    best_k, best_key = j, (-1, j)
    fill = carried
    for k in range(i + 1, j + 1):
        fill += atoms[k - 1].size
        strength = atoms[k].strength
        key = (strength if strength >= STRUCTURAL or 2 * fill >= limit else -1, k)
        if key > best_key:
            best_k, best_key = k, key
    return best_k


def _overlap(
    text: str, atoms: list[Atom], i: int, k: int, budget: int, count: Count
) -> tuple[int | None, int]:
    """Start offset and size of the tail of chunk atoms[i:k] to repeat at the start of the next.

    Whole atoms (sentences, lines) when they fit, never the chunk's first atom, never across a
    structural boundary; otherwise a clause/word tail of the last atom.
    """
    size, m = 0, k
    while m - 1 > i and size + atoms[m - 1].size <= budget and (m == k or atoms[m].strength < STRUCTURAL):
        size += atoms[m - 1].size
        m -= 1
    if m < k:
        return atoms[m].start, size
    last = atoms[k - 1]
    if last.kind == "fence":
        return None, 0
    position = tail_start(text, last, budget, count)
    if position is None:
        return None, 0
    return position, count(text[position : last.end])


def pack(
    text: str,
    atoms: list[Atom],
    lo: int,
    hi: int,
    limit: int,
    count: Count,
    *,
    forced: int | None = None,
    overlap: int = 0,
) -> list[Span]:
    """Chunks over atoms[lo:hi]. ``forced``: always break before a boundary this strong."""
    spans: list[Span] = []
    i, carry_start, carried = lo, None, 0
    while i < hi:
        if carry_start is not None and carried + atoms[i].size > limit:
            carry_start, carried = None, 0  # the overlap would push the next atom over the limit
        total, j = carried + atoms[i].size, i + 1
        while (
            j < hi
            and total + atoms[j].size <= limit
            and not (forced is not None and atoms[j].strength >= forced)
        ):
            total += atoms[j].size
            j += 1
        must_break = j == hi or (forced is not None and atoms[j].strength >= forced)
        k = j if must_break else _best_break(atoms, i, j, limit, carried)
        start = atoms[i].start if carry_start is None else carry_start
        spans.append(Span(i, k, start, atoms[k - 1].end))
        if overlap and k < hi and atoms[k].strength < STRUCTURAL:
            carry_start, carried = _overlap(text, atoms, i, k, overlap, count)
        else:
            carry_start, carried = None, 0
        i = k
    return spans
