"""Fusion arithmetic and the fusion stage's rules, checked against values computed by hand."""

from __future__ import annotations

import pytest

from kgrag.config import RetrievalSettings
from kgrag.retrieve.evidence import BRIDGE, ENTITY_PAGE, evidence_set, graph_has_structure
from kgrag.retrieve.fusion import fuse, keep_path_heads, rrf, score_fusion
from kgrag.retrieve.types import LinkedEntity, PathResult, Query, SeedSupport
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


# -- the fusion stage around RRF: path weights, evidence set, placement ------------------------


def _graph(*ids: str, support: dict[str, list[SeedSupport]]) -> PathResult:
    result = _path("graph", *ids)
    result.support = {cid: {s.seed: s for s in routes} for cid, routes in support.items()}
    return result


def _query(*surfaces_keys: tuple[str, str], feedback=(), feedback_from=()) -> Query:
    q = Query("q", linked=[LinkedEntity(surface, key, key, "exact") for surface, key in surfaces_keys])
    q.feedback, q.feedback_from = list(feedback), list(feedback_from)
    return q


def _page(seed, gain=3.0):
    return SeedSupport(seed, seed, 0, gain)


def _route(seed, entity, hops=1, gain=1.0):
    return SeedSupport(seed, entity, hops, gain)


def test_graph_weight_drops_without_an_entity_page_in_its_head():
    settings = RetrievalSettings(unstructured_graph_weight=0.25)
    keyword = _path("bm25", "k1", "k2", "k3", "k4")
    # g1 mentions x but is nobody's page; k4 is the page of y, a neighbour of x.
    mentions = _graph("g1", "k4", support={"k4": [_route("x", "y", hops=1)]})
    assert not graph_has_structure(mentions, 10)
    out = fuse([keyword, mentions], _query(("X", "x")), settings)
    assert out.weights == {"bm25": 1.0, "graph": 0.25} and "page" in out.reasons["graph"]
    # Its first hit gets no head place: "g1" (graph rank 1) stays below bm25's own top 4.
    assert [i.chunk_id for i in out.items] == ["k4", "k1", "k2", "k3", "g1"]
    # The same path with x's page among its hits votes at full weight and keeps its head place.
    paged = _graph("g1", "k4", support={"g1": [_page("x")]})
    out = fuse([keyword, paged], _query(("X", "x")), settings)
    assert out.weights["graph"] == 1.0 and out.reasons == {}
    assert out.items[1].chunk_id == "g1" and out.items[1].placed_by["rule"] == ENTITY_PAGE


def test_evidence_set_pages_first_then_one_bridge_per_entity():
    # a's page, b's page; a reaches two pages, the stronger is its bridge; b reaches one.
    g = _graph("pa", "pb", "ra1", "ra2", "rb", support={
        "pa": [_page("a")], "pb": [_page("b")],
        "ra1": [_route("a", "dir a", gain=0.9)], "ra2": [_route("a", "actor a", gain=0.5)],
        "rb": [_route("b", "dir b", gain=0.4)],
    })
    placed = evidence_set(_query(("A", "a"), ("B", "b")), g)
    assert [(p.chunk_id, p.rule, p.entity, p.hops) for p in placed] == [
        ("pa", ENTITY_PAGE, "a", 0), ("pb", ENTITY_PAGE, "b", 0), ("ra1", BRIDGE, "a", 1), ("rb", BRIDGE, "b", 1)]
    assert placed[2].page_of == "dir a"


def test_an_ambiguous_alias_covers_one_page():
    g = _graph("p1", "p2", support={"p1": [_page("black book film", gain=2.0)],
                                    "p2": [_page("black book novel", gain=3.0)]})
    placed = evidence_set(_query(("Black Book", "black book film"), ("Black Book", "black book novel")), g)
    assert [(p.chunk_id, p.surface) for p in placed] == [("p2", "Black Book")]


def test_bridge_prefers_an_entity_the_page_names_over_a_backlink():
    # "review" mentions film a (a backlink, stronger route); the director is named on a's page.
    g = _graph("pa", "review", "dir", support={
        "pa": [_page("a")], "review": [_route("a", "festival notes", gain=0.9)],
        "dir": [_route("a", "ilse varga", gain=0.6)]})
    q = _query(("A", "a"))
    assert evidence_set(q, g)[1].chunk_id == "review"  # no page text known: the strongest route
    named = {"pa": ["a", "ilse varga"]}
    placed = evidence_set(q, g, names_in=lambda ids: {i: named.get(i, []) for i in ids})
    assert placed[1].chunk_id == "dir" and placed[1].page_of == "ilse varga"
    # Nothing named on the page is reachable: the strongest other route is still the bridge.
    placed = evidence_set(q, g, names_in=lambda ids: {i: ["a"] for i in ids})
    assert placed[1].chunk_id == "review"


def test_feedback_seeds_bridge_only_for_the_entity_whose_page_they_came_from():
    # Feedback seed "dir a" was read from a's page ("pa"); its page is a's bridge, not b's.
    g = _graph("pa", "pb", "da", support={
        "pa": [_page("a")], "pb": [_page("b")], "da": [_page("dir a", gain=2.4)]})
    placed = evidence_set(_query(("A", "a"), ("B", "b"), feedback=["dir a"], feedback_from=["pa"]), g)
    assert [(p.chunk_id, p.rule, p.entity, p.hops) for p in placed] == [
        ("pa", ENTITY_PAGE, "a", 0), ("pb", ENTITY_PAGE, "b", 0), ("da", BRIDGE, "a", 1)]
    # Read from another passage, the feedback seed bridges nobody.
    placed = evidence_set(_query(("A", "a"), ("B", "b"), feedback=["dir a"], feedback_from=["other"]), g)
    assert [p.rule for p in placed] == [ENTITY_PAGE, ENTITY_PAGE]


def test_evidence_set_is_placed_after_the_first_fused_hit_and_traced():
    keyword = _path("bm25", "k1", "k2", "k3", "k4", "k5")
    dense = _path("dense", "k1", "k2", "k3", "k4", "k5")
    g = _graph("pa", "k1", "ra", support={"pa": [_page("a")], "k1": [_page("a", gain=1.0)],
                                         "ra": [_route("a", "dir a")], "far": [_route("a", "dir b", gain=0.1)]})
    out = fuse([keyword, dense, g], _query(("A", "a")), RetrievalSettings())
    order = [i.chunk_id for i in out.items]
    assert order[:3] == ["k1", "pa", "ra"]
    assert [i.placed_by["rule"] for i in out.items[:3]] == ["fusion", ENTITY_PAGE, BRIDGE]
    assert out.items[2].placed_by["page_of"] == "dir a"
    assert [p.chunk_id for p in out.evidence] == ["pa", "ra"]
    assert fuse([keyword, dense, g], _query(("A", "a")), RetrievalSettings(evidence_set=False)).evidence == []
    # after=0: the set leads; max=1: only the page.
    out = fuse([keyword, dense, g], _query(("A", "a")), RetrievalSettings(evidence_set_after=0, evidence_set_max=1))
    assert [i.chunk_id for i in out.items[:2]] == ["pa", "k1"]
