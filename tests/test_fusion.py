"""Fusion arithmetic, checked against values computed by hand."""

from __future__ import annotations

import pytest

from kgrag.retrieve.fusion import keep_path_heads, rrf, score_fusion
from kgrag.retrieve.types import PathResult
from kgrag.types import ScoredId


def _path(name: str, *ids: str, scores: list[float] | None = None) -> PathResult:
    scores = scores or [float(len(ids) - i) for i in range(len(ids))]
    return PathResult(name, [ScoredId(i, s) for i, s in zip(ids, scores)])


def test_rrf_weights_and_ties():
    fused = rrf([_path("bm25", "a", "b"), _path("dense", "b", "c")], {"bm25": 1.0, "dense": 2.0}, k=10)
    scores = {cid: score for cid, score, _ in fused}
    assert scores["a"] == pytest.approx(1 / 11)
    assert scores["b"] == pytest.approx(1 / 12 + 2 / 11)
    assert scores["c"] == pytest.approx(2 / 12)
    assert [cid for cid, _, _ in fused] == ["b", "c", "a"]
    assert fused[0][2]["bm25"].rank == 2 and fused[0][2]["dense"].rank == 1
    # Equal scores: the better single-path rank first, then the id.
    tied = rrf([_path("bm25", "x"), _path("dense", "y")], {}, k=60)
    assert [cid for cid, _, _ in tied] == ["x", "y"]


def test_score_fusion_keeps_a_lead():
    fused = score_fusion([_path("bm25", "a", "b", "c", scores=[10.0, 2.0, 1.0]),
                          _path("dense", "b", "c", "a", scores=[0.9, 0.85, 0.8])], {}, k=60)
    scores = {cid: score for cid, score, _ in fused}
    assert scores["a"] == pytest.approx(1.0 + 0.0)
    assert scores["b"] == pytest.approx(1 / 9 + 1.0)
    assert scores["c"] == pytest.approx(0.0 + 0.5)
    assert [cid for cid, _, _ in fused] == ["b", "a", "c"]


def test_each_path_keeps_its_first_hit_in_the_head():
    # "z" is the graph's first hit but fused 5th: moved to place 3; places 1-2 never change.
    results = [_path("bm25", "a", "b", "c", "d"), _path("dense", "a", "b", "c", "d"), _path("graph", "z")]
    fused = rrf(results, {}, k=60)
    assert [cid for cid, _, _ in fused] == ["a", "b", "c", "d", "z"]
    moved = keep_path_heads(fused, results, slot=3)
    assert [cid for cid, _, _ in moved] == ["a", "b", "z", "c", "d"]
    assert keep_path_heads(fused, results, slot=0) == fused
    assert [cid for cid, _, _ in keep_path_heads(fused, results, slot=10)] == ["a", "b", "c", "d", "z"]
