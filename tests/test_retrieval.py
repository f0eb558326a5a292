"""End-to-end retrieval on the embedded default with the shipped models (MiniLM, spaCy, jieba):
the bundled demo corpus plus a two-hop pair whose answer chunk never names the question's
subject."""

from __future__ import annotations

import copy

import pytest

from kgrag.retrieve.pipeline import RetrievalError
from kgrag.stores.filters import SearchFilter

from .conftest import REPO


@pytest.fixture
def kb(demo_kb):
    return demo_kb


def _rank_of(result, doc_part: str) -> int | None:
    """1-based rank of the first hit whose document id contains ``doc_part`` (ids of files are
    their paths, here under a temporary directory)."""
    for i, hit in enumerate(result.hits, start=1):
        if doc_part in hit.chunk.doc_id:
            return i
    return None


def test_single_hop_question_finds_the_passage(kb):
    result = kb.retriever.retrieve("Which manuscripts are known as the Books of Clanranald?", top_k=5)
    assert result.hits[0].chunk.title == "Books of Clanranald"
    assert not result.below_threshold
    assert {"dense", "bm25"} <= set(result.hits[0].paths)
    for stage in ("link", "dense", "bm25", "graph", "fusion", "total"):
        assert stage in result.timings_ms


def test_two_hop_question_is_bridged_by_the_graph(kb):
    q = "In which city was the director of Glass Harbor born?"
    result = kb.retriever.retrieve(q, top_k=5)
    assert [le.key for le in result.query.linked] == ["glass harbor"]
    rank = _rank_of(result, "person-maret-kuusik")
    assert rank is not None and rank <= 3
    hit = result.hits[rank - 1]
    assert "graph" in hit.paths
    # The evidence is the entity path: the film → its director (named in the film's passage).
    assert ["glass harbor", "maret kuusik"] in [p.nodes for p in hit.graph_paths]
    assert hit.paths["graph"].rank <= 2
    # The graph path alone reaches it: the passage shares no name with the question.
    graph_only = kb.retriever.retrieve(q, top_k=5, modes=("graph",))
    assert _rank_of(graph_only, "person-maret-kuusik") in (1, 2)
    assert "Glass Harbor" not in hit.chunk.text


def _graph_ranking(result):
    return [(h.id, round(h.score, 9)) for h in result.hits], result.evidence, result.support


def test_question_walk_beside_bm25_gives_the_one_search_result(kb):
    """The pipeline walks from the question's entities while BM25 runs and then only from the
    feedback seeds BM25's best hit gives (``GraphWalkPath.walk_question``): the graph path's
    hits, evidence and seed support are those of one search over the finished query, and a walk
    from other seeds is never reused."""
    graph = kb.retriever.graph_path
    questions = ["In which city was the director of Glass Harbor born?", "How is the LCA computed?",
                 "Which manuscripts are known as the Books of Clanranald?"]
    queries = [kb.retriever.retrieve(q, top_k=5, iterate=False).query for q in questions]
    assert queries[0].feedback and queries[0].linked  # both walks run for the two-hop question
    for query in queries:
        walked = graph.walk_question(query)
        assert walked is not None and walked.paths
        two_stage = graph.search(query, 20, walked)
        assert _graph_ranking(two_stage) == _graph_ranking(graph.search(query, 20))
        assert two_stage.question_walk is walked  # what a later round reuses
    # A later round: the same question entities, more feedback seeds; the first round's walk reused.
    round_query = copy.copy(queries[0])
    round_query.feedback = [*queries[0].feedback, "lowest common ancestor"]
    first = graph.search(queries[0], 20)
    assert _graph_ranking(graph.search(round_query, 20, first.question_walk)) == _graph_ranking(graph.search(round_query, 20))
    # A walk from another question's seeds is walked again, not reused.
    stale = graph.walk_question(queries[1])
    assert _graph_ranking(graph.search(queries[0], 20, stale)) == _graph_ranking(graph.search(queries[0], 20))
    assert _graph_ranking(graph.search(queries[0], 20)) != _graph_ranking(graph.search(queries[1], 20))


def test_alias_question_finds_the_chinese_chunk(kb):
    """Asked with "LCA", found the chunk that only says 最近公共祖先 — by BM25 alias expansion and
    by the graph, both through the glossary entity."""
    result = kb.retriever.retrieve("How is the LCA computed?", top_k=5)
    assert [(le.surface, le.key) for le in result.query.linked] == [("LCA", "lowest common ancestor")]
    assert "最近公共祖先" in result.query.expansions
    rank = _rank_of(result, "zuijin_gonggong_zuxian.md")
    assert rank is not None and rank <= 3
    hit = result.hits[rank - 1]
    assert "最近公共祖先" in hit.chunk.text and "LCA" not in hit.chunk.text
    assert {"bm25", "graph"} <= set(hit.paths)


def test_unanswerable_question_is_below_threshold(kb):
    result = kb.retriever.retrieve("What is the boiling point of liquid nitrogen on Neptune?")
    assert result.below_threshold
    answerable = kb.retriever.retrieve("最近公共祖先是什么？")
    assert not answerable.below_threshold


def test_fuzzy_linking_catches_a_misspelled_name(kb):
    result = kb.retriever.retrieve("Who directed Glass Harbr?", modes=("graph",))
    linked = {le.key: le for le in result.query.linked}
    assert linked["glass harbor"].method == "fuzzy"
    assert result.hits and result.hits[0].chunk.doc_id == "film-glass-harbor"


def test_filters_apply_to_every_path(kb):
    doc_id = next(d for d in kb.chunk_index.document_ids() if d.endswith("lowest_common_ancestor.md"))
    result = kb.retriever.retrieve("How is the LCA computed?", filters=SearchFilter(doc_id=doc_id))
    assert result.hits and {h.chunk.doc_id for h in result.hits} == {doc_id}
    assert any("graph" in h.paths for h in result.hits)
    with pytest.raises(RetrievalError, match="unknown retrieval mode"):
        kb.retriever.retrieve("x", modes=("sparse",))
    with pytest.raises(RetrievalError, match="empty"):
        kb.retriever.retrieve("   ")


def test_parents_are_attached_and_overlaps_dropped(kb):
    result = kb.retriever.retrieve("How do administrators assign roles through the REST API?", top_k=10)
    spans: dict[str, list[tuple[int, int]]] = {}
    for hit in result.hits:
        for s, e in spans.get(hit.chunk.doc_id, []):
            assert hit.chunk.end <= s or e <= hit.chunk.start
        spans.setdefault(hit.chunk.doc_id, []).append((hit.chunk.start, hit.chunk.end))
        if hit.chunk.parent_id:
            assert hit.parent is not None and hit.parent.id == hit.chunk.parent_id
            assert hit.chunk.text in hit.parent.text


def test_english_only_embedder_sits_out_chinese_questions(tmp_path, recognizer):
    """MiniLM alone ranks Chinese near randomly: configured as the embedder, it does not vote in
    fusion for a Chinese question, the trace says why, and asking for the dense path alone still
    runs it."""
    import shutil

    from kgrag.components import Components
    from kgrag.config import EmbedderSettings, Settings

    corpus = tmp_path / "corpus"
    shutil.copytree(REPO / "kgrag" / "demo" / "corpus", corpus)
    comps = Components(Settings(data_dir=tmp_path / "kb", embedder=EmbedderSettings(name="minilm")),
                       recognizer=recognizer)
    try:
        assert not comps.ingest_job().run([corpus], progress=False).failed
        result = comps.retriever.retrieve("最近公共祖先是什么？")
        assert "dense" not in result.query.modes and "English-only" in result.query.skipped["dense"]
        assert all("dense" not in h.paths for h in result.hits)
        assert any("zuijin_gonggong_zuxian.md" in h.chunk.doc_id for h in result.hits[:2])
        only_dense = comps.retriever.retrieve("最近公共祖先是什么？", modes=("dense",))
        assert only_dense.hits and all("dense" in h.paths for h in only_dense.hits)
        english = comps.retriever.retrieve("How is the LCA computed?")
        assert "dense" in english.query.modes and not english.query.skipped
    finally:
        comps.close()


def test_default_embedder_lets_dense_vote_on_chinese_questions(kb):
    """The script-routed default embeds Chinese with multilingual-e5: dense votes, and alone it
    finds the Chinese page."""
    result = kb.retriever.retrieve("最近公共祖先是什么？")
    assert "dense" in result.query.modes and "dense" not in result.query.skipped
    assert any("zuijin_gonggong_zuxian.md" in h.chunk.doc_id for h in result.hits[:2])
    only_dense = kb.retriever.retrieve("最近公共祖先是什么？", modes=("dense",), top_k=3)
    assert any("zuijin_gonggong_zuxian.md" in h.chunk.doc_id for h in only_dense.hits)


def test_reranker_stage_reorders_the_fused_candidates(kb, cross_encoder_dir):
    """Mechanics only (the test cross-encoder's head is untrained): the shared reranker scores the
    fused pool, the order follows its scores, both ranks are in the trace, and min_score gates."""
    from kgrag.models.reranker import build_reranker
    from kgrag.retrieve.pipeline import Retriever

    settings = kb.settings.retrieval.model_copy(update={"reranker_path": str(cross_encoder_dir), "rerank_top": 12})
    reranker = build_reranker(settings)
    retriever = Retriever(settings, kb.chunk_index, kb.graph, kb.embedder, reranker=reranker)
    try:
        result = retriever.retrieve("How is the LCA computed?", top_k=8)
        assert result.reranker == reranker.name and "cross-encoder" in result.reranker
        assert "rerank" in result.timings_ms
        scores = [h.rerank_score for h in result.hits]
        assert scores == sorted(scores, reverse=True) and all(s is not None for s in scores)
        assert [h.rerank_rank for h in result.hits] == sorted(h.rerank_rank for h in result.hits)
        assert all(h.fused_rank >= 1 for h in result.hits)  # the pre-rerank rank stays in the trace
        direct = reranker.score("How is the LCA computed?", [result.hits[0].chunk.headed_text])
        assert abs(direct[0] - result.hits[0].rerank_score) < 1e-4
        unranked = retriever.retrieve("How is the LCA computed?", top_k=8, rerank=False)
        assert unranked.reranker is None and all(h.rerank_rank is None for h in unranked.hits)

        gated = Retriever(settings.model_copy(update={"min_score": max(scores) + 1.0}), kb.chunk_index,
                          kb.graph, kb.embedder, reranker=reranker)
        try:
            below = gated.retrieve("How is the LCA computed?", top_k=8)
            assert below.below_threshold and below.hits == []
        finally:
            gated.close()
    finally:
        retriever.close()
