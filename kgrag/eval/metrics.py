"""Ranking metrics over passage ids, and latency percentiles.

Conventions (as in the HippoRAG papers and ``shared/bench/README.md``): relevance is binary (a
passage is gold or not); a ranked list is first reduced to distinct ids in rank order (one
passage may come back as several chunks, it counts once, at its best rank); duplicate gold ids
count once. A query without gold passages cannot be scored: the functions refuse it rather than
return a number that would silently raise or lower an average.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np


def distinct(ids: Iterable[str]) -> list[str]:
    """Ids in first-seen order, each once."""
    return list(dict.fromkeys(ids))


def _gold_set(gold: Iterable[str]) -> set[str]:
    g = set(gold)
    if not g:
        raise ValueError("a query needs at least one gold id to be scored")
    return g


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """|gold ∩ top-k| / |gold|."""
    _check_k(k)
    g = _gold_set(gold)
    return len(g.intersection(distinct(ranked)[:k])) / len(g)


def all_gold_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1.0 when every gold passage is in the top k, else 0.0 (multi-hop needs them all)."""
    _check_k(k)
    return 1.0 if _gold_set(gold).issubset(distinct(ranked)[:k]) else 0.0


def ndcg_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Binary-relevance NDCG: sum of 1/log2(rank+1) over gold hits in the top k, divided by
    the same sum for an ideal list (all gold first, at most k of them)."""
    _check_k(k)
    g = _gold_set(gold)
    dcg = sum(1.0 / math.log2(rank + 1) for rank, pid in enumerate(distinct(ranked)[:k], start=1) if pid in g)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(g), k) + 1))
    return dcg / ideal


def reciprocal_rank(ranked: Sequence[str], gold: Iterable[str]) -> float:
    """1 / rank of the first gold passage (ranks over distinct ids); 0.0 when none is ranked."""
    g = _gold_set(gold)
    for rank, pid in enumerate(distinct(ranked), start=1):
        if pid in g:
            return 1.0 / rank
    return 0.0


def gold_ranks(ranked: Sequence[str], gold: Iterable[str]) -> dict[str, int | None]:
    """Each gold id's 1-based rank among distinct ranked ids, None when not ranked (what error
    analysis reads: which gold passage was missed, and how far down the found ones sit)."""
    position = {pid: rank for rank, pid in enumerate(distinct(ranked), start=1)}
    return {gid: position.get(gid) for gid in distinct(gold)}


def mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else float("nan")


def percentiles(values: Sequence[float], qs: Sequence[int] = (50, 95)) -> dict[str, float]:
    """``{"p50": .., "p95": ..}`` with linear interpolation (numpy's default); NaN when empty."""
    if not values:
        return {f"p{q}": float("nan") for q in qs}
    arr = np.asarray(values, dtype=float)
    return {f"p{q}": round(float(np.percentile(arr, q)), 2) for q in qs}
