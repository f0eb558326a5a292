"""The cross-encoder step: the reranker reorders the first ``retrieval.rerank_top`` fused hits.

Languages: a reranker that reads English only (``Reranker.multilingual`` False: the one
``kgrag reranker train`` fits from the shipped MiniLM) scores only what it can read. A question
written in Chinese is not reranked at all; a chunk in Chinese (any Han character) keeps its
fused place, and the English chunks around it are reordered among the places English chunks
held. So a cross-language question's Chinese answer is never moved by a model that cannot read
it (xquad_xling_dev, RGB).

A reranker that raises scores nothing: the fused order stands and the note says why (the
server answers 200).
"""

from __future__ import annotations

from dataclasses import dataclass

from kgrag.models.base import Reranker
from kgrag.retrieve.types import Hit
from kgrag.text.scripts import has_han


@dataclass
class Reranked:
    hits: list[Hit]
    scored: int  # hits the model scored
    note: str | None = None  # why fewer (or none) were scored; None: all of the top were


def readable_by(reranker: Reranker, question: str, hits: list[Hit]) -> tuple[list[int], str | None]:
    """Positions (in ``hits``) the reranker may score, and a note when it may not score all."""
    if reranker.multilingual:
        return list(range(len(hits))), None
    if has_han(question):
        return [], f"reranker {reranker.name} reads English only and the question is not: fused order kept"
    positions = [i for i, h in enumerate(hits) if not (has_han(h.chunk.text) or has_han(h.chunk.title))]
    kept = len(hits) - len(positions)
    note = None if not kept else f"{kept} chunk(s) not in English kept their fused places (reranker {reranker.name} reads English only)"
    return positions, note


def rerank(reranker: Reranker, question: str, hits: list[Hit], weight: float = 1.0) -> Reranked:
    """``hits`` (the top of fusion) in the reranker's order, within the positions it may score;
    every hit gets its ``rerank_rank`` (1-based place after reranking), scored ones their score.
    ``weight`` < 1: the order blends the reranker's ranks with fusion's (``blended``)."""
    positions, note = readable_by(reranker, question, hits)
    if positions:
        try:
            scores = reranker.score(question, [hits[i].chunk.headed_text for i in positions])
        except Exception as exc:  # noqa: BLE001 - a failing model must not fail the question
            return _placed(hits, Reranked(hits, 0, f"reranker {reranker.name} failed ({type(exc).__name__}: "
                                                  f"{str(exc)[:200]}): fused order kept"))
        scored = [hits[i] for i in positions]
        for hit, score in zip(scored, scores, strict=True):
            hit.rerank_score = float(score)
            hit.score = float(score)
        scored.sort(key=lambda h: (-h.score, h.fused_rank))
        if weight < 1.0:
            scored = blended(scored, weight)
        out = list(hits)
        for i, hit in zip(positions, scored, strict=True):
            out[i] = hit
        hits = out
    return _placed(hits, Reranked(hits, len(positions), note))


BLEND_K = 60  # the reciprocal-rank constant of fusion's RRF, for the same reason


def blended(by_reranker: list[Hit], weight: float) -> list[Hit]:
    """``by_reranker`` (in the reranker's order) placed by ``weight`` / (k + its rank there) +
    (1 - ``weight``) / (k + its rank in fusion's order among these hits): a reranker trained on
    little data moves a hit only as far as fusion lets it."""
    fused = {id(h): r for r, h in enumerate(sorted(by_reranker, key=lambda h: h.fused_rank), start=1)}
    place = {id(h): weight / (BLEND_K + r) + (1 - weight) / (BLEND_K + fused[id(h)])
             for r, h in enumerate(by_reranker, start=1)}
    return sorted(by_reranker, key=lambda h: (-place[id(h)], h.fused_rank))


def _placed(hits: list[Hit], result: Reranked) -> Reranked:
    for rank, hit in enumerate(result.hits, start=1):
        hit.rerank_rank = rank
    return result
