"""What only the embedded SQLite stores promise: files, reopening, caches, threads, FTS5 details.

The behaviour every store shares is in tests/contract/.
"""

from __future__ import annotations

import os
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from kgrag.stores.base import StoreError
from kgrag.stores.sqlite.chunks import SqliteChunkIndex
from kgrag.stores.sqlite.graph import SqliteGraphStore
from kgrag.types import Chunk, Document, Entity, Mention, Relation

DIM = 16


def _unit_rows(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _chunks(doc_id: str, texts: list[str], **fields) -> list[Chunk]:
    return [Chunk(id=f"{doc_id}#{i}", doc_id=doc_id, text=t, ordinal=i, **fields) for i, t in enumerate(texts)]


@pytest.fixture
def index(tmp_path: Path):
    store = SqliteChunkIndex(tmp_path / "chunks.sqlite")
    yield store
    store.close()


@pytest.fixture
def graph(tmp_path: Path):
    store = SqliteGraphStore(tmp_path / "graph.sqlite")
    yield store
    store.close()


# -- chunk index: files and dimensions ----------------------------------------------------------
def test_chunk_index_persists_across_reopen(tmp_path):
    path = tmp_path / "chunks.sqlite"
    vectors = _unit_rows(3, seed=1)
    first = SqliteChunkIndex(path)
    first.upsert(_chunks("d", ["alpha beta", "gamma delta", "epsilon"]), vectors)
    first.close()
    again = SqliteChunkIndex(path)
    assert again.dim == DIM and again.count() == 3
    assert again.search_dense(vectors[1], 1)[0].id == "d#1"
    assert again.search_bm25("gamma", 1)[0].id == "d#1"
    with pytest.raises(StoreError, match=rf"dim {DIM + 1}.*dim {DIM}"):
        again.upsert(_chunks("e", ["x"]), np.ones((1, DIM + 1), dtype=np.float32))
    again.close()
    with pytest.raises(StoreError, match=rf"{DIM}-dim.*dim={DIM * 2}"):
        SqliteChunkIndex(path, dim=DIM * 2)


def test_dim_given_up_front_is_enforced_at_the_first_upsert(tmp_path):
    store = SqliteChunkIndex(tmp_path / "c.sqlite", dim=DIM)
    with pytest.raises(StoreError, match=rf"dim 3.*dim {DIM}"):
        store.upsert(_chunks("d", ["x"]), np.ones((1, 3), dtype=np.float32))
    assert store.count() == 0
    store.upsert(_chunks("d", ["x"]), _unit_rows(1, 0))
    with pytest.raises(StoreError, match=rf"query vector has dim 3, index holds {DIM}-dim"):
        store.search_dense(np.ones(3), 1)
    store.close()


@pytest.mark.parametrize(
    "opener,other",
    [(SqliteChunkIndex, SqliteGraphStore), (SqliteGraphStore, SqliteChunkIndex)],
)
def test_a_file_of_the_other_store_kind_is_refused(tmp_path, opener, other):
    path = tmp_path / "store.sqlite"
    other(path).close()
    with pytest.raises(StoreError, match=rf"{path}.*expected a kgrag"):
        opener(path)


def test_foreign_or_broken_files_are_refused_with_their_path(tmp_path):
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match=str(garbage)):
        SqliteChunkIndex(garbage)
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE chunks (x)")
    with pytest.raises(StoreError, match="not a kgrag store"):
        SqliteGraphStore(foreign)
    with pytest.raises(StoreError, match=str(tmp_path / "missing-dir")):
        SqliteChunkIndex(tmp_path / "missing-dir" / "c.sqlite")


def test_a_closed_store_says_so(tmp_path):
    store = SqliteGraphStore(tmp_path / "g.sqlite")
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.stats()


# -- chunk index: input checks roll back --------------------------------------------------------
def test_bad_upserts_are_refused_and_write_nothing(index):
    index.upsert(_chunks("d", ["kept text"]), _unit_rows(1, 0))
    with pytest.raises(StoreError, match="metadata is not JSON"):
        index.upsert(_chunks("e", ["a", "b"], metadata={"when": object()}), _unit_rows(2, 1))
    with pytest.raises(StoreError, match="appears twice"):
        index.upsert(_chunks("e", ["a"]) * 2, _unit_rows(2, 1))
    with pytest.raises(StoreError, match=r"one vector row per searchable chunk \(2\)"):
        index.upsert(_chunks("e", ["a", "b"]), _unit_rows(3, 1))
    with pytest.raises(StoreError, match="NaN"):
        index.upsert(_chunks("e", ["a"]), np.full((1, DIM), np.nan, dtype=np.float32))
    assert index.count() == 1 and index.document_ids() == {"d"}


def test_chunks_without_vectors_are_found_by_bm25_only(index):
    index.upsert(_chunks("d", ["lexical only"]), None)
    assert index.search_bm25("lexical", 3)[0].id == "d#0"
    assert index.search_dense(_unit_rows(1, 0)[0], 3) == []
    assert next(index.iter_chunks())[1] is None


# -- chunk index: FTS5 ------------------------------------------------------------------------
def test_fts_keeps_jieba_words_whole(index):
    index.upsert(_chunks("zh", ["最近公共祖先问题", "最大流问题"]), None)
    assert [h.id for h in index.search_bm25("最近", 5)] == ["zh#0"]
    # "最" alone is not a token of either chunk: the tokenizer did not split words into characters.
    assert index.search_bm25("最", 5) == []


def test_heading_weight_decides_between_title_and_body_matches(tmp_path):
    chunks = [
        Chunk(id="in-title", doc_id="d", title="penguin", text="colony counts on beaches"),
        Chunk(id="in-body", doc_id="d", title="seabirds", text="penguin counts on beaches"),
        *_chunks("filler", ["rocks and sand", "waves at night", "cold wind blows"]),
    ]
    ranked = {}
    for weight in (5.0, 0.2):
        store = SqliteChunkIndex(tmp_path / f"w{weight}.sqlite", heading_weight=weight)
        store.upsert(chunks, None)
        ranked[weight] = [h.id for h in store.search_bm25("penguin", 2)]
        store.close()
    assert ranked[5.0] == ["in-title", "in-body"]
    assert ranked[0.2] == ["in-body", "in-title"]


# -- chunk index: the dense cache ------------------------------------------------------------------
def test_dense_cache_follows_appends_replacements_and_deletes(index):
    vectors = _unit_rows(6, seed=3)
    index.upsert(_chunks("a", ["one", "two"]), vectors[:2])
    assert index.search_dense(vectors[0], 1)[0].id == "a#0"  # loads the matrix
    index.upsert(_chunks("b", ["three", "four"]), vectors[2:4])  # appended
    assert index.search_dense(vectors[3], 1)[0].id == "b#1"
    index.upsert(_chunks("a", ["one again"]), vectors[4:5])  # replaces a#0: reload
    assert index.search_dense(vectors[4], 1)[0].id == "a#0"
    assert index.search_dense(vectors[0], 1)[0].score < 0.99
    index.delete_document("b")
    assert {h.id for h in index.search_dense(vectors[3], 10)} == {"a#0", "a#1"}


def test_a_second_connection_sees_writes_from_the_first(tmp_path):
    path = tmp_path / "shared.sqlite"
    reader, writer = SqliteChunkIndex(path), SqliteChunkIndex(path)
    vectors = _unit_rows(2, seed=4)
    writer.upsert(_chunks("a", ["first"]), vectors[:1])
    assert reader.search_dense(vectors[0], 1)[0].id == "a#0"
    assert reader.count(searchable_only=True) == 1  # counted once, then kept
    writer.upsert(_chunks("b", ["second"]), vectors[1:])
    assert reader.search_dense(vectors[1], 1)[0].id == "b#0"
    assert reader.count(searchable_only=True) == 2 and writer.count() == 2
    writer.delete_document("a")
    assert [h.id for h in reader.search_dense(vectors[0], 5)] == ["b#0"]
    assert reader.count(searchable_only=True) == 1 and writer.count() == 1
    reader.close()
    writer.close()


def test_concurrent_searches_and_writes_from_threads(index):
    vectors = _unit_rows(40, seed=5)
    index.upsert(_chunks("base", [f"base text {i}" for i in range(20)]), vectors[:20])

    def write(i: int) -> None:
        index.upsert(_chunks(f"w{i}", [f"written text {i}"]), vectors[20 + i : 21 + i])

    def search(i: int) -> int:
        return len(index.search_dense(vectors[i], 5)) + len(index.search_bm25("text", 5))

    with ThreadPoolExecutor(max_workers=8) as pool:
        writes = [pool.submit(write, i) for i in range(20)]
        searches = [pool.submit(search, i) for i in range(40)]
        assert all(f.result() == 10 for f in searches)
        for f in writes:
            f.result()
    assert index.count() == 40
    assert {h.id for h in index.search_dense(vectors[39], 1)} == {"w19#0"}


# -- graph store --------------------------------------------------------------------------------
def _graph_doc(doc_id: str) -> tuple[Document, list[Chunk]]:
    return Document(id=doc_id, source=f"{doc_id}.txt", hash="h"), _chunks(doc_id, ["text"])


def test_graph_persists_and_the_traversal_cache_sees_other_connections(tmp_path):
    path = tmp_path / "g.sqlite"
    reader, writer = SqliteGraphStore(path), SqliteGraphStore(path)
    doc, chunks = _graph_doc("d")
    ents = [Entity(key=k, name=k) for k in "abc"]
    writer.write_document(doc, chunks, ents, [Mention(k, "d#0") for k in "abc"],
                          [Relation("a", "b", "d#0")])
    assert set(reader.neighbors(["a"], 2)) == {"a", "b"}  # cached now
    assert reader.stats(relations=False) == {"documents": 1, "chunks": 1, "entities": 3, "aliases": 3, "mentions": 3}
    assert reader.stats()["relations"] == 1  # counted once, kept until the file changes
    writer.write_document(doc, chunks, ents, [Mention(k, "d#0") for k in "abc"],
                          [Relation("a", "b", "d#0"), Relation("b", "c", "d#0")])
    assert set(reader.neighbors(["a"], 2)) == {"a", "b", "c"}
    assert reader.stats()["relations"] == 2 and writer.stats()["relations"] == 2
    writer.delete_document("d")
    assert reader.stats()["documents"] == 0 and writer.stats()["entities"] == writer.stats()["relations"] == 0
    writer.write_document(doc, chunks, ents, [Mention(k, "d#0") for k in "abc"],
                          [Relation("a", "b", "d#0"), Relation("b", "c", "d#0")])
    writer.close()
    reader.close()
    reopened = SqliteGraphStore(path)
    assert reopened.stats()["relations"] == 2 and reopened.get_document("d").hash == "h"
    reopened.close()


def test_kept_mention_counts_and_top_mentions_follow_every_write(tmp_path):
    """The walk's per-entity figures are kept between questions; a write through this store or
    another connection's commit must still show at once."""
    path = tmp_path / "g.sqlite"
    reader, writer = SqliteGraphStore(path), SqliteGraphStore(path)
    ents = [Entity(key=k, name=k) for k in "ab"]
    doc, chunks = Document(id="d", source="d.txt", hash="h"), _chunks("d", ["one", "two"])
    writer.write_document(doc, chunks, ents, [Mention("a", "d#0"), Mention("a", "d#1"), Mention("b", "d#1")], [])
    assert reader.entity_chunk_counts(["a", "b", "zz"]) == {"a": 2, "b": 1}
    assert reader.mentions_of(["a"], per_key=1) == {"a": [("d#0", 1)]}
    other = Document(id="e", source="e.txt", hash="h")
    writer.write_document(other, _chunks("e", ["three"]), ents, [Mention("a", "e#0", 5)], [])
    assert reader.entity_chunk_counts(["a", "b"]) == {"a": 3, "b": 1}  # another connection's commit
    assert reader.mentions_of(["a"], per_key=1) == {"a": [("e#0", 5)]}
    reader.delete_document("e")  # this store's own write
    assert reader.entity_chunk_counts(["a", "b"]) == {"a": 2, "b": 1}
    assert reader.mentions_of(["a"], per_key=1) == {"a": [("d#0", 1)]}
    writer.delete_document("d")
    assert reader.entity_chunk_counts(["a", "b"]) == {} and reader.mentions_of(["a"], per_key=1) == {}
    writer.close()
    reader.close()


def test_kept_alias_lookups_follow_every_write(tmp_path):
    """Alias lookups are kept between questions (the walk looks up the same section titles
    again and again); a new alias from another connection's commit, an alias of this store's
    own write, and a deleted entity's aliases must show at once, absent aliases never."""
    path = tmp_path / "g.sqlite"
    reader, writer = SqliteGraphStore(path), SqliteGraphStore(path)
    doc = Document(id="d", source="d.txt", hash="h")
    writer.write_document(doc, _chunks("d", ["one"]), [Entity(key="lca", name="LCA")], [Mention("lca", "d#0")], [])
    assert reader.lookup_aliases(["lca", "lowest common ancestor"]) == {"lca": ["lca"]}
    writer.upsert_entities([Entity(key="lca", name="LCA", aliases=["Lowest Common Ancestor"])])
    assert reader.lookup_aliases(["lca", "lowest common ancestor"]) == {
        "lca": ["lca"], "lowest common ancestor": ["lca"]}  # another connection's commit
    reader.upsert_entities([Entity(key="tree", name="Lowest Common Ancestor")])  # this store's own write
    assert reader.lookup_aliases(["lowest common ancestor"]) == {"lowest common ancestor": ["lca", "tree"]}
    writer.delete_document("d")  # the extracted entity goes with its document; the curated ones stay
    assert reader.lookup_aliases(["lca", "lowest common ancestor"]) == writer.lookup_aliases(
        ["lca", "lowest common ancestor"])
    writer.close()
    reader.close()


def test_co_occurs_is_one_undirected_edge_but_typed_relations_keep_direction(graph):
    doc, chunks = _graph_doc("d")
    graph.write_document(
        doc, chunks, [Entity(key=k, name=k) for k in "ab"], [Mention(k, "d#0") for k in "ab"],
        [Relation("b", "a", "d#0"), Relation("a", "b", "d#0", weight=2.0),
         Relation("b", "a", "d#0", "PART_OF"), Relation("a", "b", "d#0", "PART_OF")],
    )
    assert graph.stats()["relations"] == 3  # (a,b,CO_OCCURS), (b,a,PART_OF), (a,b,PART_OF)
    assert graph.relation_weight("a", "b") == pytest.approx(5.0)


def test_graph_write_refuses_foreign_chunks_and_rolls_back(graph):
    doc, chunks = _graph_doc("d")
    graph.write_document(doc, chunks, [Entity(key="x", name="X")], [Mention("x", "d#0")], [])
    other = Document(id="e", source="e.txt")
    with pytest.raises(StoreError, match="belongs to document 'd'"):
        graph.write_document(other, chunks, [], [], [])
    stolen = [Chunk(id="d#0", doc_id="e", text="same id, other document")]
    with pytest.raises(StoreError, match="chunk id 'd#0' already belongs to document 'd'"):
        graph.write_document(other, stolen, [Entity(key="y", name="Y")], [Mention("y", "d#0")], [])
    with pytest.raises(StoreError, match="weight nan"):
        graph.write_document(doc, chunks, [], [], [Relation("x", "x", "d#0", weight=float("nan"))])
    assert graph.stats() == {"documents": 1, "chunks": 1, "entities": 1, "aliases": 1,
                             "mentions": 1, "relations": 0}
    with pytest.raises(StoreError, match="hops must be >= 0"):
        graph.neighbors(["x"], -1)


def test_an_index_added_to_the_schema_is_built_in_files_made_before_it(tmp_path):
    """``mentions_top`` (the graph path's top mentions per entity) came after files existed:
    opening such a file builds it, and reads give what they gave without it."""
    path = tmp_path / "graph.sqlite"
    store = SqliteGraphStore(path)
    doc, _ = _graph_doc("d")
    chunks = _chunks("d", ["one", "two", "three"])
    store.write_document(doc, chunks, [Entity(key="e", name="E")],
                         [Mention("e", f"d#{i}", count=i + 1) for i in range(3)], [])
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP INDEX mentions_top")
    reopened = SqliteGraphStore(path)
    with sqlite3.connect(path) as conn:
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "mentions_top" in indexes
    assert reopened.mentions_of(["e"], per_key=2) == {"e": [("d#2", 3), ("d#1", 2)]}
    assert reopened.mentions_of(["e"]) == {"e": [("d#2", 3), ("d#1", 2), ("d#0", 1)]}


def test_a_passed_integrity_check_is_not_repeated_on_unchanged_files_and_a_changed_file_is_checked(tmp_path):
    """``problems()`` runs ``PRAGMA quick_check`` once per file state, across processes (the
    verdict is noted beside the file): a restart on a 100k passage knowledge base would pay
    8.5 s for it. A write, or bytes changed behind SQLite's back, makes it run again."""
    path = tmp_path / "chunks.sqlite"
    first = SqliteChunkIndex(path)
    first.upsert(_chunks("a", ["one", "two"]), _unit_rows(2, seed=1))
    first.close()
    checked = SqliteChunkIndex(path)
    assert checked.problems() == [] and checked._db.quick_checks == 1
    assert checked.problems() == [] and checked._db.quick_checks == 1  # same process: kept
    checked.close()
    restarted = SqliteChunkIndex(path)
    assert restarted.problems() == [] and restarted._db.quick_checks == 0  # noted: not repeated
    restarted.upsert(_chunks("b", ["three"]), _unit_rows(1, seed=2))
    assert restarted.problems() == [] and restarted._db.quick_checks == 1  # written: checked again
    restarted.close()  # the last connection moves the WAL into the file: a changed file
    broken = SqliteChunkIndex(path)
    assert broken.problems() == [] and broken._db.quick_checks == 1
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = path.stat().st_size
    with open(path, "r+b") as f:  # garbage over every page but the header and the last
        f.seek(4096)
        f.write(os.urandom(size - 8192))
    found = broken.problems()
    assert broken._db.quick_checks == 2 and found and "quick_check" in found[0]
    assert not (tmp_path / "chunks.sqlite.checked").exists()  # a failed check leaves no note
    broken.close()


def test_another_connections_appends_are_read_alone_and_anything_else_reloads_the_matrix(tmp_path):
    """A reader's dense matrix after another process's commit: appended rows are read on their
    own (``dense_catch_ups``); a delete or a replacement (even of the newest chunk, whose key
    the old allocation gave again) reloads it — the answers are those of a fresh reader."""
    path = tmp_path / "chunks.sqlite"
    reader, writer = SqliteChunkIndex(path), SqliteChunkIndex(path)
    vectors = _unit_rows(6, seed=7)

    def nearest(i: int) -> str:
        return reader.search_dense(vectors[i], 1)[0].id

    def fresh(i: int) -> str:
        other = SqliteChunkIndex(path)
        try:
            return other.search_dense(vectors[i], 1)[0].id
        finally:
            other.close()

    writer.upsert(_chunks("a", ["one", "two"]), vectors[:2])
    assert nearest(0) == "a#0" and reader.dense_catch_ups == 0  # first load: whole
    writer.upsert(_chunks("b", ["three"]), vectors[2:3])
    assert nearest(2) == "b#0" and reader.dense_catch_ups == 1  # appended: read alone
    reader.upsert(_chunks("c", ["four"]), vectors[3:4])  # the reader's own write, then another's
    writer.upsert(_chunks("d", ["five"]), vectors[4:5])
    assert nearest(3) == "c#0" and nearest(4) == "d#0" and reader.dense_catch_ups == 2
    writer.replace_document("d", _chunks("d", ["five, again"]), vectors[5:6])  # the newest chunk replaced
    assert nearest(5) == "d#0" == fresh(5) and reader.dense_catch_ups == 2
    assert reader.search_dense(vectors[4], 1)[0].score < 0.999  # the replaced vector is gone
    writer.delete_document("a")
    assert nearest(0) == fresh(0) != "a#0" and reader.dense_catch_ups == 2
    assert len(reader.search_dense(vectors[0], 10)) == 3 == reader.count(searchable_only=True)
    reader.close()
    writer.close()
