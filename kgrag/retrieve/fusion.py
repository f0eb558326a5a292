"""Weighted reciprocal-rank fusion: score(d) = Σ_path weight_path / (k + rank_path(d)).

RRF needs no score calibration between paths (a BM25 score, a cosine and a graph score live on
different scales) and is robust to one path's bad day; the weights let a deployment lean on
the path that suits its documents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kgrag.retrieve.types import PathRank, PathResult


def rrf(
    results: Sequence[PathResult], weights: Mapping[str, float], k: int = 60
) -> list[tuple[str, float, dict[str, PathRank]]]:
    """(chunk id, fused score, {path: rank and score}) best first; ties broken by the best
    single-path rank, then by id, so the order is deterministic."""
    fused: dict[str, float] = {}
    ranks: dict[str, dict[str, PathRank]] = {}
    for result in results:
        weight = weights.get(result.name, 1.0)
        for rank, hit in enumerate(result.hits, start=1):
            fused[hit.id] = fused.get(hit.id, 0.0) + weight / (k + rank)
            ranks.setdefault(hit.id, {})[result.name] = PathRank(rank, hit.score)
    return _ordered(fused, ranks)


def _ordered(fused: dict[str, float], ranks: dict[str, dict[str, PathRank]]) -> list[tuple[str, float, dict[str, PathRank]]]:
    """Best fused score first; ties: the best single-path rank, then the id (deterministic)."""
    order = sorted(fused, key=lambda cid: (-fused[cid], min(r.rank for r in ranks[cid].values()), cid))
    return [(cid, fused[cid], ranks[cid]) for cid in order]


def score_fusion(
    results: Sequence[PathResult], weights: Mapping[str, float], k: int = 60
) -> list[tuple[str, float, dict[str, PathRank]]]:
    """Weighted sum of min–max normalized scores (each path's list scaled to 0..1); unlike
    RRF it keeps the size of a path's lead (a BM25 hit far ahead of the rest stays ahead).
    Measured on HotpotQA (200 questions, R@5): bm25+dense 80.5 vs RRF's 77.5, but with the
    graph path 83.5 vs RRF's 84.2 — so RRF is the default."""
    fused: dict[str, float] = {}
    ranks: dict[str, dict[str, PathRank]] = {}
    for result in results:
        if not result.hits:
            continue
        weight = weights.get(result.name, 1.0)
        top, low = result.hits[0].score, result.hits[-1].score
        span = (top - low) or 1.0
        for rank, hit in enumerate(result.hits, start=1):
            fused[hit.id] = fused.get(hit.id, 0.0) + weight * (hit.score - low) / span
            ranks.setdefault(hit.id, {})[result.name] = PathRank(rank, hit.score)
    return _ordered(fused, ranks)


def keep_path_heads(
    fused: list[tuple[str, float, dict[str, PathRank]]], results: Sequence[PathResult], slot: int
) -> list[tuple[str, float, dict[str, PathRank]]]:
    """Move each path's first hit up to place ``slot`` (1-based) when fusion put it lower.

    RRF rewards agreement: a passage two paths rank 2nd–3rd beats one a single path is sure of
    (rank 1) and another never saw — and a multi-hop question's second passage is often seen by
    one path only. Measured (R@5, bm25+dense+graph): HotpotQA 500 87.8 → 88.1, MuSiQue 100
    70.3 → 70.7; R@1 cannot change (only places from ``slot`` down move)."""
    if slot < 1:
        return fused
    fused = list(fused)
    for result in results:
        if not result.hits:
            continue
        top = result.hits[0].id
        pos = next((i for i, item in enumerate(fused) if item[0] == top), None)
        if pos is not None and pos >= slot:
            fused.insert(slot - 1, fused.pop(pos))
    return fused
