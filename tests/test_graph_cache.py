"""The SQLite graph store's in-memory entity graph follows writes by the changed pairs only, and
always equals a fresh build: after an ingest by another store object on the same file (another
process, as far as SQLite can tell), a delete, an alias merge, and when its change log was pruned.
Real ingestion (models, extraction) on real HotpotQA passages."""

from __future__ import annotations

import threading

import pytest

from kgrag.aliases.service import AliasService
from kgrag.components import Components
from kgrag.stores.graph_walk import build_entity_graph
from kgrag.stores.sqlite.graph_cache import EntityGraphCache
from tests.conftest import hotpot_records, write_jsonl


def shape(graph) -> tuple[set, list]:
    return set(graph.nodes), sorted((min(a, b), max(a, b), round(d["weight"], 9), d["type"])
                                    for a, b, d in graph.edges(data=True))


def fresh(store) -> tuple[set, list]:
    """The graph a new process would build from the file."""
    with store._db.read("test") as conn:
        rows = conn.execute("SELECT source_key, target_key, type, sum(weight) FROM relation_evidence "
                            "GROUP BY source_key, target_key, type").fetchall()
    return shape(build_entity_graph(rows))


def cached(store) -> tuple[set, list]:
    store.neighbors(["__none__"], hops=1)  # any walk brings the cache up to date
    return shape(store._graph_cache.graph)


@pytest.fixture
def kb(components, tmp_path, embedder, recognizer):
    """12 passages ingested by ``components`` (the reader), and a second Components on the same
    data dir (the writer) with 3 more passages ready to ingest."""
    records = hotpot_records(15)
    write_jsonl(tmp_path / "first.jsonl", records[:12])
    write_jsonl(tmp_path / "more.jsonl", records[12:])
    assert not components.ingest_job().run([tmp_path / "first.jsonl"], progress=False).failed
    writer = Components(components.settings, embedder=embedder, recognizer=recognizer)
    yield components.graph, writer, tmp_path / "more.jsonl"
    writer.close()


def test_another_writers_ingest_and_delete_update_the_graph_without_a_rebuild(kb):
    reader, writer, more = kb
    assert cached(reader) == fresh(reader)
    cache: EntityGraphCache = reader._graph_cache
    edges_before = cache.graph.number_of_edges()
    assert (cache.rebuilds, cache.updates) == (1, 0)

    assert not writer.ingest_job().run([more], progress=False).failed
    assert cached(reader) == fresh(reader)
    assert (cache.rebuilds, cache.updates) == (1, 1) and cache.graph.number_of_edges() > edges_before

    doc = writer.graph.list_documents()[0].id
    assert writer.graph.delete_document(doc)
    assert cached(reader) == fresh(reader)
    assert (cache.rebuilds, cache.updates) == (1, 2)
    assert cache.edges == cache.graph.number_of_edges()  # the count it keeps to decide on rebuilds


def test_alias_merge_and_entity_delete_are_followed_too(kb):
    reader, writer, _ = kb
    cached(reader)
    top = sorted(reader.list_entities(), key=lambda e: -len(reader.mentions_of([e.key]).get(e.key, [])))[:3]
    service = AliasService.from_components(writer, user="test")
    service.merge(top[0].key, [top[1].key])
    assert cached(reader) == fresh(reader)
    service.delete(top[2].key)
    assert cached(reader) == fresh(reader)
    assert top[2].key not in reader._graph_cache.graph and reader._graph_cache.rebuilds == 1


def test_a_pruned_change_log_makes_the_reader_rebuild(kb):
    reader, writer, more = kb
    cached(reader)
    assert not writer.ingest_job().run([more], progress=False).failed
    with writer.graph._db.write("prune as the trigger would") as conn:
        conn.execute("DELETE FROM relation_changes WHERE seq < (SELECT max(seq) FROM relation_changes)")
    assert cached(reader) == fresh(reader)
    assert reader._graph_cache.rebuilds == 2


def test_walks_during_concurrent_writes_see_a_consistent_graph(kb):
    reader, writer, more = kb
    cached(reader)
    keys = [e.key for e in reader.list_entities()[:20]]
    errors: list[BaseException] = []
    stop = threading.Event()

    def walk() -> None:
        while not stop.is_set():
            try:
                for path in reader.neighbors(keys, hops=2).values():
                    assert path.nodes[0] in keys
            except BaseException as exc:  # noqa: BLE001 - collected and re-raised in the test thread
                errors.append(exc)
                return

    threads = [threading.Thread(target=walk) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        assert not writer.ingest_job().run([more], progress=False).failed
        for doc in writer.graph.list_documents()[:3]:
            writer.graph.delete_document(doc.id)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors[0]
    assert cached(reader) == fresh(reader)
