"""ChunkIndex contract: every implementation must pass these, through the protocol only."""

from __future__ import annotations

import numpy as np
import pytest

from kgrag.stores.base import ChunkIndex, StoreError
from kgrag.stores.filters import SearchFilter
from kgrag.types import Chunk

from .conftest import DIM

RARE = "zyxomatic"  # appears in exactly one searchable chunk (and in its parent)


def _corpus() -> list[Chunk]:
    guide = dict(doc_id="guide", source="docs/guide.md", title="Admin guide")
    notes = dict(doc_id="notes", source="docs/notes.txt", title="Field notes")
    zh = dict(doc_id="zh", source="docs/算法.md", title="算法笔记")
    return [
        Chunk(id="guide#p1", text=f"Installing on Linux and Windows. The {RARE} daemon starts at boot.",
              section_path="Install", is_parent=True, start=0, end=120, ordinal=0, page=1, **guide),
        Chunk(id="guide#c1", text=f"Installing on Linux: the {RARE} daemon starts at boot.",
              section_path="Install > Linux", parent_id="guide#p1", start=0, end=60, ordinal=1, page=1,
              metadata={"lang": "en", "tags": ["setup", "linux"], "note": "ünïcode ✓"}, **guide),
        Chunk(id="guide#c2", text="Installing on Windows: run the installer as administrator.",
              section_path="Install > Windows", parent_id="guide#p1", start=60, end=120, ordinal=2, page=2,
              **guide),
        Chunk(id="guide#c3", text="Usage: open the console and type a command to start the service.",
              section_path="Usage", start=120, end=190, ordinal=3, page=3, **guide),
        Chunk(id="notes#c1", text="The weather at the field station was cold and windy all week.",
              section_path="Week 1", ordinal=0, **notes),
        Chunk(id="notes#c2", text="Penguins were counted on the northern beach; the colony is growing.",
              section_path="Week 2", ordinal=1, **notes),
        Chunk(id="zh#c1", text="最近公共祖先是树中两个节点的公共祖先里深度最大的那个节点。",
              section_path="树 > 最近公共祖先", ordinal=0, **zh),
        Chunk(id="zh#c2", text="深度优先搜索从根节点出发，沿着一条路径一直走到叶子。",
              section_path="树 > 搜索", ordinal=1, **zh),
        Chunk(id="zh#c3", text="哈希表用数组和链表实现，查找的平均时间是常数。",
              section_path="散列", ordinal=2, **zh),
    ]


def _vectors(n: int) -> np.ndarray:
    """Row i points mostly along axis i: the nearest row to row i is row i itself."""
    rows = np.eye(DIM, dtype=np.float32)[:n] + 0.3 * np.roll(np.eye(DIM, dtype=np.float32), 1, axis=1)[:n]
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


CORPUS = _corpus()
SEARCHABLE = [c for c in CORPUS if c.searchable]
VECTORS = _vectors(len(SEARCHABLE))
VECTOR_OF = {c.id: VECTORS[i] for i, c in enumerate(SEARCHABLE)}
PARENT_IDS = {c.id for c in CORPUS if c.is_parent}
BY_ID = {c.id: c for c in CORPUS}


@pytest.fixture
def filled(chunk_index: ChunkIndex) -> ChunkIndex:
    chunk_index.upsert(CORPUS, VECTORS)
    return chunk_index


def _ids(hits) -> list[str]:
    return [h.id for h in hits]


def test_is_a_chunk_index(chunk_index):
    assert isinstance(chunk_index, ChunkIndex)


def test_get_round_trips_every_field_in_the_order_asked(filled):
    asked = ["zh#c2", "no-such-chunk", "guide#p1", "guide#c1"]
    got = filled.get(asked)
    assert got == [BY_ID["zh#c2"], BY_ID["guide#p1"], BY_ID["guide#c1"]]  # dataclass equality: all fields
    assert filled.get([]) == []


def test_counts_and_document_ids(filled):
    assert filled.count() == len(CORPUS)
    assert filled.count(searchable_only=True) == len(SEARCHABLE)
    assert filled.document_ids() == {"guide", "notes", "zh"}


def test_iter_chunks_returns_every_chunk_with_its_vector(filled):
    seen = {chunk.id: (chunk, vec) for chunk, vec in filled.iter_chunks(batch_size=3)}
    assert set(seen) == set(BY_ID)
    for cid, (chunk, vec) in seen.items():
        assert chunk == BY_ID[cid]
        if chunk.is_parent:
            assert vec is None
        else:
            np.testing.assert_allclose(vec, VECTOR_OF[cid], atol=1e-6)


def test_reupsert_replaces_text_vector_and_terms(filled):
    old = BY_ID["notes#c1"]
    new = Chunk(**{**old.__dict__, "text": "A quokka smiled at the camera.", "metadata": {"v": 2}})
    new_vector = VECTOR_OF["notes#c2"]  # now notes#c1 and notes#c2 share a direction
    filled.upsert([new], new_vector[None, :])
    assert filled.get(["notes#c1"]) == [new]
    assert filled.count() == len(CORPUS)
    assert "notes#c1" not in _ids(filled.search_bm25("weather windy", 10))
    assert _ids(filled.search_bm25("quokka", 10)) == ["notes#c1"]
    top2 = filled.search_dense(new_vector, 2)
    assert set(_ids(top2)) == {"notes#c1", "notes#c2"}
    assert top2[0].score == pytest.approx(1.0, abs=1e-5) and top2[1].score == pytest.approx(1.0, abs=1e-5)


def test_bm25_ranks_the_rare_term_first(filled):
    hits = filled.search_bm25(f"{RARE} installer", 5)
    assert hits[0].id == "guide#c1"
    assert "guide#c2" in _ids(hits)  # "installer" stems like "installing": every guide install chunk
    assert all(h.score > 0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_bm25_searches_title_and_section_path(filled):
    assert set(_ids(filled.search_bm25("field notes", 10))) >= {"notes#c1", "notes#c2"}
    assert _ids(filled.search_bm25("windows", 10))[0] == "guide#c2"


def test_bm25_on_chinese_words(filled):
    assert filled.search_bm25("最近公共祖先是什么", 3)[0].id == "zh#c1"
    # A single jieba word matches the chunks that contain it and no other.
    assert _ids(filled.search_bm25("最近", 10)) == ["zh#c1"]
    assert filled.search_bm25("哈希表的查找时间", 3)[0].id == "zh#c3"


@pytest.mark.parametrize(
    "query",
    [f'NEAR( "{RARE}', f"{RARE} OR b*", f"title:{RARE}", f"-{RARE}", f"{RARE}~5 AND (x:y)",
     f"[* TO *] {RARE}^3", f'\\"{RARE}\\" ) (', f"'); DROP TABLE chunks;-- {RARE}"],
)
def test_bm25_treats_query_syntax_as_plain_text(filled, query):
    assert filled.search_bm25(query, 3)[0].id == "guide#c1"


@pytest.mark.parametrize("query", ["-", "", "   ", '"', "*", "the of and", "NOT", "()"])
def test_bm25_query_without_terms_finds_nothing(filled, query):
    assert filled.search_bm25(query, 5) == []


def test_search_respects_k(filled):
    assert len(filled.search_bm25("installing", 1)) == 1
    assert len(filled.search_dense(VECTORS[0], 3)) == 3


@pytest.mark.parametrize("prepared", [False, True], ids=["cold", "prepared"])
def test_dense_returns_the_nearest_vector_first(filled, prepared):
    if prepared:
        filled.prepare_reads()  # loading ahead of the first search changes no answer
    for cid in ("guide#c3", "zh#c2"):
        hits = filled.search_dense(VECTOR_OF[cid], 4)
        assert hits[0].id == cid
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert hits[1].score < 0.999


def test_parents_are_never_returned(filled):
    for query in (RARE, "installing linux windows boot", "daemon"):
        found = _ids(filled.search_bm25(query, 20))
        assert found and not PARENT_IDS & set(found)
    assert not PARENT_IDS & set(_ids(filled.search_dense(VECTORS[0], 20)))
    assert len(filled.search_dense(VECTORS[0], 100)) == len(SEARCHABLE)


FILTER_CASES = [
    ({"doc_id": "guide"}, lambda c: c.doc_id == "guide"),
    ({"doc_id": ["notes", "zh"]}, lambda c: c.doc_id in ("notes", "zh")),
    ({"source": "docs/notes.txt"}, lambda c: c.source == "docs/notes.txt"),
    ({"section_path_prefix": "Install"}, lambda c: c.section_path.startswith("Install")),
    ({"section_path_prefix": "树 > "}, lambda c: c.section_path.startswith("树 > ")),
    ({"doc_id": "guide", "section_path_prefix": "Usage"}, lambda c: c.id == "guide#c3"),
]


@pytest.mark.parametrize("filters,keep", FILTER_CASES, ids=[str(f) for f, _ in FILTER_CASES])
def test_filters_apply_to_both_searches(filled, filters, keep):
    filters = SearchFilter.parse(filters)
    expected = {c.id for c in SEARCHABLE if keep(c)}
    assert set(_ids(filled.search_dense(VECTORS[0], 100, filters))) == expected
    # A query whose terms together touch every searchable chunk.
    everything = "installing usage weather penguins 树 深度 哈希表 admin field 算法"
    assert set(_ids(filled.search_bm25(everything, 100))) == {c.id for c in SEARCHABLE}
    assert set(_ids(filled.search_bm25(everything, 100, filters))) == expected


def test_delete_document_removes_every_chunk_and_counts_them(filled):
    assert filled.delete_document("guide") == 4
    assert filled.delete_document("guide") == 0
    assert filled.delete_document("never-existed") == 0
    assert filled.get(["guide#c1", "guide#p1", "notes#c1"]) == [BY_ID["notes#c1"]]
    assert filled.document_ids() == {"notes", "zh"}
    assert filled.count() == len(CORPUS) - 4
    assert filled.search_bm25(RARE, 5) == []
    assert all(h.id.startswith("notes#") or h.id.startswith("zh#") for h in filled.search_dense(VECTORS[0], 100))


def test_searches_on_an_empty_index_find_nothing(chunk_index):
    assert chunk_index.search_bm25("anything", 5) == []
    assert chunk_index.search_dense(VECTORS[0], 5) == []
    assert chunk_index.count() == 0 and chunk_index.document_ids() == set()


def test_vector_of_another_dimension_is_refused(filled):
    extra = Chunk(id="extra#c1", doc_id="extra", text="more text")
    with pytest.raises(StoreError, match=str(DIM)):
        filled.upsert([extra], np.ones((1, DIM + 4), dtype=np.float32) / 4)
    assert filled.get(["extra#c1"]) == []


def test_ids_and_text_that_look_like_queries_are_stored_verbatim(chunk_index):
    nasty = Chunk(id="'); DROP TABLE chunks;--", doc_id='" OR 1=1 `x`', text="MATCH (n) DETACH DELETE n 🚀",
                  source="C:\\path\\with 'quotes'", section_path="a > `b` > \"c\"")
    chunk_index.upsert([nasty], VECTORS[:1])
    assert chunk_index.get([nasty.id]) == [nasty]
    assert _ids(chunk_index.search_bm25("detach delete", 5)) == [nasty.id]
    assert _ids(chunk_index.search_dense(VECTORS[0], 5, SearchFilter(doc_id=nasty.doc_id))) == [nasty.id]
    assert chunk_index.delete_document(nasty.doc_id) == 1


def test_replace_document_swaps_a_documents_chunks_and_repeats_harmlessly(filled):
    new = [Chunk(id="notes#c9", doc_id="notes", text=f"A {RARE} sighting at the field station.", ordinal=0),
           Chunk(id="notes#c1", doc_id="notes", text="Calm and sunny all week.", ordinal=1)]
    vectors = VECTORS[:2]
    assert filled.replace_document("notes", new, vectors) == 1  # notes#c2; notes#c1 is rewritten
    assert filled.chunk_ids_by_document()["notes"] == {"notes#c1", "notes#c9"}
    assert filled.replace_document("notes", new, vectors) == 0  # the journal's recovery may repeat it
    assert filled.get(["notes#c1", "notes#c2"]) == [new[1]]
    assert "notes#c9" in _ids(filled.search_bm25(RARE, 5))
    assert filled.count() == len(CORPUS)


def test_chunk_ids_by_document_lists_every_chunk(filled):
    expected: dict[str, set[str]] = {}
    for c in CORPUS:
        expected.setdefault(c.doc_id, set()).add(c.id)
    assert filled.chunk_ids_by_document() == expected
    filled.delete_document("zh")
    assert "zh" not in filled.chunk_ids_by_document()
