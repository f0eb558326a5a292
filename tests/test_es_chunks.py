"""Elasticsearch chunk index beyond the shared contract: mapping life cycle, vector size rules,
errors that name the server, agreement with the SQLite store, and the keyword-side assertions
of the contract again (on osmem-server the contract tests that need kNN skip at their first
dense search, before their later BM25 assertions run). Every test runs on each server that
answers: osmem-server always, an Elasticsearch 8 container or KGRAG_TEST_ES_URL where given."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from kgrag.config import ElasticsearchSettings, Settings
from kgrag.stores.base import StoreError
from kgrag.stores.elasticsearch.chunks import ElasticsearchChunkIndex
from kgrag.stores.elasticsearch.mapping import MAPPING_VERSION, META_KEY
from kgrag.stores.factory import build_chunk_index
from kgrag.stores.filters import SearchFilter
from kgrag.stores.sqlite.chunks import SqliteChunkIndex
from kgrag.types import Chunk
from tests import es_servers
from tests.contract.test_chunk_index_contract import (
    BY_ID,
    CORPUS,
    FILTER_CASES,
    PARENT_IDS,
    RARE,
    SEARCHABLE,
    VECTORS,
)

DIM = VECTORS.shape[1]


@pytest.fixture(
    params=[
        pytest.param(es_servers.osmem_client, id="osmem", marks=pytest.mark.osmem),
        pytest.param(es_servers.docker_client, id="docker", marks=pytest.mark.docker),
        pytest.param(es_servers.env_client, id="env"),
    ]
)
def es_server(request):
    """(client, url, knn) of one server; indices made through ``index_name`` are dropped."""
    client, url, knn = request.param()
    made: list[str] = []

    def index_name() -> str:
        made.append(es_servers.fresh_index_name())
        return made[-1]

    yield client, url, knn, index_name
    for name in made:
        es_servers.drop_index(client, name)


def _open(es_server, index: str, **kw) -> ElasticsearchChunkIndex:
    client, url, knn, _ = es_server
    return ElasticsearchChunkIndex(client, index, url=url, knn=kw.pop("knn", knn), **kw)


def _ids(hits) -> list[str]:
    return [h.id for h in hits]


# -- mapping life cycle ------------------------------------------------------------------------
def test_opening_twice_adopts_the_index_and_keeps_its_chunks(es_server):
    index = es_server[3]()
    first = _open(es_server, index, dim=DIM)
    first.upsert(CORPUS, VECTORS)
    mapping_before = es_server[0].indices.get_mapping(index=index).body
    again = _open(es_server, index)  # no dim given: read back from the mapping
    assert again.dim == DIM
    assert again.count() == len(CORPUS)
    assert es_server[0].indices.get_mapping(index=index).body == mapping_before
    meta = next(iter(mapping_before.values()))["mappings"]["_meta"]
    assert meta[META_KEY] == MAPPING_VERSION and meta["dim"] == DIM


def test_an_index_made_before_facets_gains_their_fields_and_keeps_working(es_server):
    """An index created with the mapping of before document facets (no language/doc_type/tags/
    date fields, ``dynamic: strict``): opening it adds the fields; its old chunks are unknown on
    every facet, new chunks are filtered on them."""
    from kgrag.stores.elasticsearch import mapping as m

    client, _, knn, index_name = es_server
    index = index_name()
    old_mappings = m.index_mappings(DIM, knn)
    for key in m.FACET_FIELDS:
        del old_mappings["properties"][key]
    client.indices.create(index=index, settings=m.index_settings(), mappings=old_mappings)
    old_doc = m.document(Chunk(id="old#0", doc_id="old", text="legacy password rule"), None)
    client.index(index=index, id="old#0", document=old_doc, refresh=True)
    store = _open(es_server, index, dim=DIM)
    properties = client.indices.get_mapping(index=index).body[index]["mappings"]["properties"]
    assert {k: properties[k]["type"] for k in m.FACET_FIELDS} == {
        "language": "keyword", "doc_type": "keyword", "tags": "keyword", "date": "date"}
    new = Chunk(id="new#0", doc_id="new", text="current password rule",
                metadata={"language": "en", "doc_type": "pdf", "tags": ["security"], "date": "2023-04-05"})
    store.upsert([new], None)
    assert {h.id for h in store.search_bm25("password", 10)} == {"old#0", "new#0"}
    for raw in ({"language": "en"}, {"tags": "security"}, {"date_from": "2023-01-01", "date_to": "2023-12-31"}):
        assert [h.id for h in store.search_bm25("password", 10, SearchFilter.parse(raw))] == ["new#0"], raw
    catalog = store.facet_catalog()
    assert (catalog.doc_types, catalog.tags, catalog.date_min, catalog.date_max) == (
        {"pdf"}, {"security"}, "2023-04-05", "2023-04-05")


def test_concurrent_first_opens_create_one_index(es_server):
    """Several processes starting at once: one creates the index, the others adopt it."""
    from concurrent.futures import ThreadPoolExecutor

    index = es_server[3]()
    with ThreadPoolExecutor(max_workers=4) as pool:
        stores = list(pool.map(lambda _: _open(es_server, index, dim=DIM), range(4)))
    assert {s.dim for s in stores} == {DIM}
    stores[0].upsert(CORPUS, VECTORS)
    assert all(s.count() == len(CORPUS) for s in stores)


def test_reopening_with_another_dim_is_refused(es_server):
    index = es_server[3]()
    _open(es_server, index, dim=DIM)
    with pytest.raises(StoreError, match=rf"{DIM}-dim vectors, asked for dim=4"):
        _open(es_server, index, dim=4)


def test_first_vectors_fix_the_dim_for_every_client(es_server):
    index = es_server[3]()
    writer = _open(es_server, index)
    other = _open(es_server, index)  # opened before any vector exists
    assert writer.dim is None and other.dim is None
    writer.upsert(CORPUS, VECTORS)
    assert writer.dim == DIM
    extra = Chunk(id="extra#c1", doc_id="extra", text="more text")
    with pytest.raises(StoreError, match=rf"dim 3, the index holds dim {DIM}"):
        other.upsert([extra], np.ones((1, 3), dtype=np.float32) / np.sqrt(3))
    assert other.dim == DIM
    assert other.get(["extra#c1"]) == []


def test_chunks_without_vectors_leave_the_dim_open(es_server):
    index = es_server[3]()
    store = _open(es_server, index)
    store.upsert(CORPUS, None)
    assert store.dim is None and store.count() == len(CORPUS)
    assert all(vec is None for _, vec in store.iter_chunks())
    if store.knn:
        assert store.search_dense(VECTORS[0], 5) == []


def test_an_index_not_made_by_kgrag_is_refused(es_server):
    client, url, _, index_name = es_server
    index = index_name()
    client.indices.create(index=index, mappings={"properties": {"title": {"type": "text"}}})
    with pytest.raises(StoreError, match=rf"{index}.*not created by this kgrag version"):
        _open(es_server, index)


def test_knn_setting_must_match_the_index(es_server):
    index = es_server[3]()
    store = _open(es_server, index)
    with pytest.raises(StoreError, match=f"created with knn={store.knn}"):
        _open(es_server, index, knn=not store.knn)


# -- bad input ---------------------------------------------------------------------------------
def test_bad_chunks_are_refused_before_anything_is_written(es_server):
    store = _open(es_server, es_server[3]())
    too_long = Chunk(id="x" * 513, doc_id="d", text="text")
    with pytest.raises(StoreError, match="1 to 512 bytes"):
        store.upsert([too_long], None)
    odd = Chunk(id="odd#c1", doc_id="d", text="text", metadata={"when": object()})
    with pytest.raises(StoreError, match="odd#c1.*not JSON"):
        store.upsert([odd], None)
    with pytest.raises(StoreError, match="twice"):
        store.upsert([BY_ID["notes#c1"], BY_ID["notes#c1"]], None)
    assert store.count() == 0


def test_dense_search_on_a_bm25_only_index_is_refused(es_server):
    store = _open(es_server, es_server[3](), knn=False)
    with pytest.raises(StoreError, match="knn=False"):
        store.search_dense(VECTORS[0], 3)


def test_heading_weight_below_one_is_refused(es_server):
    with pytest.raises(StoreError, match="heading_weight"):
        _open(es_server, es_server[3](), heading_weight=0.5)


# -- connection errors -------------------------------------------------------------------------
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_server_is_a_store_error_naming_the_url_without_the_password():
    port = _closed_port()
    settings = ElasticsearchSettings(url=f"http://elastic:s3cret@127.0.0.1:{port}", request_timeout_s=2)
    with pytest.raises(StoreError) as err:
        ElasticsearchChunkIndex.from_settings(settings)
    message = str(err.value)
    assert f"cannot reach Elasticsearch at http://elastic:***@127.0.0.1:{port}" in message
    assert "s3cret" not in message


def test_factory_builds_the_elasticsearch_index(tmp_path):
    port = _closed_port()
    settings = Settings(
        data_dir=tmp_path, chunk_store="elasticsearch",
        elasticsearch=ElasticsearchSettings(url=f"http://127.0.0.1:{port}", request_timeout_s=2),
    )
    # No server listens: the error proves the factory chose and configured the ES adapter.
    with pytest.raises(StoreError, match=f"cannot reach Elasticsearch at http://127.0.0.1:{port}"):
        build_chunk_index(settings)


@pytest.mark.parametrize(
    "kwargs,problem",
    [({"api_key": "k", "user": "u", "password": "p"}, "not both"), ({"user": "u"}, "together")],
)
def test_contradictory_credentials_are_refused(kwargs, problem):
    with pytest.raises(StoreError, match=problem):
        ElasticsearchChunkIndex.from_settings(ElasticsearchSettings(**kwargs))


# -- keyword half of the contract, on es_server ----------------------------------------------------
@pytest.fixture
def filled(es_server) -> ElasticsearchChunkIndex:
    store = _open(es_server, es_server[3](), dim=DIM)
    store.upsert(CORPUS, VECTORS)
    return store


@pytest.mark.parametrize("filters,keep", FILTER_CASES, ids=[str(f) for f, _ in FILTER_CASES])
def test_bm25_filters(filled, filters, keep):
    everything = "installing usage weather penguins 树 深度 哈希表 admin field 算法"
    assert set(_ids(filled.search_bm25(everything, 100))) == {c.id for c in SEARCHABLE}
    found = filled.search_bm25(everything, 100, SearchFilter.parse(filters))
    assert set(_ids(found)) == {c.id for c in SEARCHABLE if keep(c)}


def test_bm25_respects_k_and_never_returns_parents(filled):
    assert len(filled.search_bm25("installing", 1)) == 1
    for query in (RARE, "installing linux windows boot", "daemon"):
        found = _ids(filled.search_bm25(query, 20))
        assert found and not PARENT_IDS & set(found)


def test_reupsert_replaces_terms(filled):
    old = BY_ID["notes#c1"]
    new = Chunk(**{**old.__dict__, "text": "A quokka smiled at the camera.", "metadata": {"v": 2}})
    filled.upsert([new], VECTORS[:1])
    assert filled.get(["notes#c1"]) == [new]
    assert filled.count() == len(CORPUS)
    assert "notes#c1" not in _ids(filled.search_bm25("weather windy", 10))
    assert _ids(filled.search_bm25("quokka", 10)) == ["notes#c1"]


def test_delete_document_removes_chunks_and_terms(filled):
    assert filled.delete_document("guide") == 4
    assert filled.delete_document("guide") == 0
    assert filled.get(["guide#c1", "guide#p1", "notes#c1"]) == [BY_ID["notes#c1"]]
    assert filled.document_ids() == {"notes", "zh"}
    assert filled.count() == len(CORPUS) - 4 and filled.count(searchable_only=True) == len(SEARCHABLE) - 3
    assert filled.search_bm25(RARE, 5) == []


def test_empty_index_finds_nothing(es_server):
    store = _open(es_server, es_server[3]())
    assert store.search_bm25("anything", 5) == []
    assert store.count() == 0 and store.document_ids() == set() and list(store.iter_chunks()) == []


def test_ids_that_look_like_queries_are_stored_verbatim(es_server):
    store = _open(es_server, es_server[3]())
    nasty = Chunk(id="'); DROP TABLE chunks;--", doc_id='" OR 1=1 `x` *', text="MATCH (n) DETACH DELETE n 🚀",
                  source="C:\\path\\with 'quotes'", section_path="a > `b` > \"c\"")
    store.upsert([nasty], VECTORS[:1])
    assert store.get([nasty.id]) == [nasty]
    assert _ids(store.search_bm25("detach delete", 5, SearchFilter(doc_id=nasty.doc_id))) == [nasty.id]
    assert _ids(store.search_bm25("detach delete", 5, SearchFilter(section_path_prefix="a > `b`"))) == [nasty.id]
    assert store.delete_document(nasty.doc_id) == 1


def test_heading_terms_weigh_more_than_body_terms(es_server):
    """Same length, the query term once: in the heading of one chunk, the body of the other. At
    weight 1 BM25F (Elasticsearch) ties them; at weight 2 the heading match is clearly ahead."""
    in_heading = Chunk(id="a", doc_id="a", title="Penguins", text="Notes taken on the beach this week.")
    in_body = Chunk(id="b", doc_id="b", title="Beach notes", text="Penguins taken on the week this.")
    advantage = {}
    for weight in (1.0, 2.0):
        store = _open(es_server, es_server[3](), heading_weight=weight)
        store.upsert([in_heading, in_body], None)
        scores = {h.id: h.score for h in store.search_bm25("penguins", 2)}
        advantage[weight] = scores["a"] / scores["b"]
    assert advantage[1.0] >= 0.999
    assert advantage[2.0] > advantage[1.0] * 1.3


def test_paging_over_many_documents(es_server):
    """More chunks than one bulk request (500) and documents than one aggregation page (1000)."""
    store = _open(es_server, es_server[3]())
    chunks = [Chunk(id=f"d{i:04d}#c{j}", doc_id=f"d{i:04d}", text=f"chunk {j} of document {i}", ordinal=j)
              for i in range(1100) for j in range(2)]
    store.upsert(chunks, None)
    assert store.count() == 2200
    assert store.document_ids() == {f"d{i:04d}" for i in range(1100)}
    seen = [c.id for c, _ in store.iter_chunks(batch_size=300)]
    assert seen == sorted(c.id for c in chunks)  # grouped by document, in ordinal order
    assert len(store.get([c.id for c in chunks])) == 2200  # more ids than one mget batch


def test_bm25_ranks_like_the_sqlite_store(es_server, tmp_path):
    """Same analysis, same BM25F weighting: the two stores agree on what ranks first."""
    es = _open(es_server, es_server[3]())
    sqlite = SqliteChunkIndex(tmp_path / "chunks.sqlite")
    try:
        es.upsert(CORPUS, None)
        sqlite.upsert(CORPUS, None)
        queries = [RARE, "installer windows", "field notes penguins", "最近公共祖先是什么", "哈希表的查找时间",
                   "usage console command", "Linux boot daemon", "深度优先搜索"]
        for q in queries:
            es_hits, sqlite_hits = _ids(es.search_bm25(q, 10)), _ids(sqlite.search_bm25(q, 10))
            assert set(es_hits) == set(sqlite_hits), q
            assert es_hits[0] == sqlite_hits[0], q
    finally:
        sqlite.close()


# -- with the ingestion job --------------------------------------------------------------------
@pytest.mark.slow
def test_ingest_job_writes_the_same_chunks_and_bm25_as_into_sqlite(es_server, components, embedder, recognizer, tmp_path):
    """The real ingest job (shipped models) over the demo corpus, once into the embedded stores,
    once with the Elasticsearch chunk index: same chunks, same vectors, same BM25 top hits."""
    from importlib.resources import files

    from kgrag.components import Components
    from kgrag.config import Settings

    corpus = files("kgrag") / "demo" / "corpus"
    components.ingest_job().run([str(corpus)], progress=False)
    es_components = Components(Settings(data_dir=tmp_path / "es-kb"), embedder=embedder, recognizer=recognizer)
    es_components._chunk_index = _open(es_server, es_server[3]())  # the graph stays embedded
    try:
        es_components.ingest_job().run([str(corpus)], progress=False)
        sqlite, es = components.chunk_index, es_components.chunk_index
        expected = {c.id: (c, v) for c, v in sqlite.iter_chunks()}
        got = {c.id: (c, v) for c, v in es.iter_chunks()}
        assert got.keys() == expected.keys() and len(got) > 30
        for cid, (chunk, vec) in got.items():
            assert chunk == expected[cid][0]
            assert (vec is None) == (expected[cid][1] is None)
            if vec is not None:
                np.testing.assert_array_equal(vec, expected[cid][1])
        assert es.document_ids() == sqlite.document_ids()
        for query in ("lowest common ancestor", "最近公共祖先", "管理员 权限", "administrator role permissions"):
            assert _ids(es.search_bm25(query, 3))[:1] == _ids(sqlite.search_bm25(query, 3))[:1], query
    finally:
        es_components.close()
