"""The SQLite graph store's in-memory entity graph follows writes by the changed pairs only, and
always equals a fresh build: after an ingest by another store object on the same file (another
process, as far as SQLite can tell), a delete, an alias merge, and when its change log was pruned.
Real ingestion (models, extraction) on real HotpotQA passages."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from kgrag.aliases.service import AliasService
from kgrag.components import Components
from kgrag.stores.graph_walk import NetworkxAdjacency, best_paths, build_entity_graph
from kgrag.stores.sqlite.compact_graph import CompactGraph
from kgrag.stores.sqlite.graph import SqliteGraphStore
from kgrag.stores.sqlite.graph_cache import EntityGraphCache
from kgrag.types import Chunk, Document, Entity, Mention, Relation
from tests.conftest import hotpot_records, write_jsonl


def shape(graph) -> tuple[set, list]:
    """Nodes and edges of a networkx graph, the reference."""
    return set(graph.nodes), sorted((min(a, b), max(a, b), round(d["weight"], 9), d["type"])
                                    for a, b, d in graph.edges(data=True))


def compact_shape(graph: CompactGraph) -> tuple[set, list]:
    return graph.nodes(), sorted((a, b, round(w, 9), t) for a, b, w, t in graph.edges())


def fresh(store) -> tuple[set, list]:
    """The graph a new process would build from the file, built by networkx (the reference)."""
    with store._db.read("test") as conn:
        rows = conn.execute("SELECT source_key, target_key, type, sum(weight) FROM relation_evidence "
                            "GROUP BY source_key, target_key, type").fetchall()
    return shape(build_entity_graph(rows))


def cached(store) -> tuple[set, list]:
    store.neighbors(["__none__"], hops=1)  # any walk brings the cache up to date
    return compact_shape(store._graph_cache.graph)


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
    edges_before = cache.edges
    assert (cache.rebuilds, cache.updates) == (1, 0)

    assert not writer.ingest_job().run([more], progress=False).failed
    assert cached(reader) == fresh(reader)
    assert (cache.rebuilds, cache.updates) == (1, 1) and cache.edges > edges_before

    doc = writer.graph.list_documents()[0].id
    assert writer.graph.delete_document(doc)
    assert cached(reader) == fresh(reader)
    assert (cache.rebuilds, cache.updates) == (1, 2)
    assert cache.edges == len(list(cache.graph.edges()))  # the count it keeps to decide on rebuilds


def test_alias_merge_and_entity_delete_are_followed_too(kb):
    reader, writer, _ = kb
    cached(reader)
    top = sorted(reader.alias_admin.list_entities(), key=lambda e: -len(reader.mentions_of([e.key]).get(e.key, [])))[:3]
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
    keys = [e.key for e in reader.alias_admin.list_entities()[:20]]
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


def test_walks_on_the_compact_graph_equal_walks_on_networkx(kb):
    """Same best paths (nodes, edge types, weights) from the same starts, before and after an
    incremental update: the walk cannot tell the layouts apart."""
    reader, writer, more = kb
    cached(reader)  # built now: what follows reaches it through the overlay
    assert not writer.ingest_job().run([more], progress=False).failed
    writer.graph.delete_document(writer.graph.list_documents()[0].id)
    reader.neighbors(["__none__"], hops=1)
    with reader._db.read("test") as conn:
        rows = conn.execute("SELECT source_key, target_key, type, sum(weight) FROM relation_evidence "
                            "GROUP BY source_key, target_key, type").fetchall()
    reference = NetworkxAdjacency(build_entity_graph(rows))
    compact = reader._graph_cache.graph
    assert compact.overlay  # the comparison covers the overlay, not only the arrays
    keys = sorted(reader._graph_cache.graph.nodes())
    for start in keys[:: max(1, len(keys) // 40)]:
        got = best_paths(compact, [start], hops=2, limit=50)
        want = best_paths(reference, [start], hops=2, limit=50)
        assert {k: (p.nodes, p.edges, [round(w, 9) for w in p.weights]) for k, p in got.items()} == \
               {k: (p.nodes, p.edges, [round(w, 9) for w in p.weights]) for k, p in want.items()}


def restarted(store) -> SqliteGraphStore:
    """A new store object on the same file: what a restarted server opens."""
    return SqliteGraphStore(store.path)


def test_a_restart_loads_the_saved_graph_and_applies_later_changes(kb):
    reader, writer, more = kb
    cached(reader)  # the first build saves the arrays beside the database
    assert Path(reader.path + ".walk.npz").exists()
    again = restarted(reader)
    try:
        assert cached(again) == fresh(again)
        assert (again._graph_cache.snapshot_loads, again._graph_cache.rebuilds) == (1, 0)
    finally:
        again.close()
    assert not writer.ingest_job().run([more], progress=False).failed  # after the snapshot
    again = restarted(reader)
    try:
        assert cached(again) == fresh(again)
        cache = again._graph_cache
        assert (cache.snapshot_loads, cache.rebuilds, cache.updates) == (1, 0, 1)
    finally:
        again.close()


def test_an_ingest_leaves_the_graph_built_and_saved_so_no_reader_rebuilds_after_it(kb, monkeypatch):
    reader, writer, more = kb
    # The fixture's ingest built the reader's graph and saved it before any question walked.
    assert Path(reader.path + ".walk.npz").exists()
    cache = reader._graph_cache
    assert (cache.rebuilds, cache.snapshot_loads) == (1, 0)
    # Every change now counts as bulk: the writer's ingest rebuilds its own graph and saves it;
    # the reader, too far behind to catch up pair by pair, loads that newer snapshot instead of
    # re-reading every relation.
    monkeypatch.setattr("kgrag.stores.sqlite.graph_cache.MIN_REBUILD_CHANGES", 0)
    monkeypatch.setattr("kgrag.stores.sqlite.graph_cache.REBUILD_FRACTION", 0.0)
    report = writer.ingest_job().run([more], progress=False)
    assert not report.failed and report.seconds["prepare reads"] > 0
    assert writer.graph._graph_cache.rebuilds == 1
    assert cached(reader) == fresh(reader)
    assert (cache.rebuilds, cache.snapshot_loads) == (1, 1)
    # An ingest with nothing new touches no cache.
    assert writer.ingest_job().run([more], progress=False).seconds["prepare reads"] == 0


def test_a_small_ingest_leaves_the_snapshot_to_its_readers_without_reading_the_graph(kb):
    """A writer that will not read (the ingest job) skips the graph entirely while a reader
    starting from the saved snapshot catches up from the log anyway: at 100k passages a
    one-document ingest loaded the 240 MB snapshot and caught it up, 1.0–1.7 s, only to exit."""
    reader, writer, more = kb
    snapshot = Path(reader.path + ".walk.npz")
    saved = snapshot.stat().st_mtime_ns
    report = writer.ingest_job().run([more], progress=False)
    assert not report.failed and report.new
    cache = writer.graph._graph_cache
    assert (cache.graph, cache.rebuilds, cache.snapshot_loads) == (None, 0, 0)  # never read
    assert snapshot.stat().st_mtime_ns == saved
    again = restarted(reader)  # a server started now: the snapshot, then the logged changes
    try:
        assert cached(again) == fresh(again)
        assert (again._graph_cache.snapshot_loads, again._graph_cache.rebuilds, again._graph_cache.updates) == (1, 0, 1)
    finally:
        again.close()


def test_a_snapshot_of_another_database_or_a_broken_one_is_not_used(kb, tmp_path):
    reader, writer, _ = kb
    cached(reader)
    snapshot = Path(reader.path + ".walk.npz")
    other = SqliteGraphStore(tmp_path / "other.sqlite")  # a different database, its own change log
    try:
        text = "Ada Quillfeather lives in Marrowby."
        chunk = Chunk(id="d#c0", doc_id="d", text=text, end=len(text))
        other.write_document(Document(id="d", source="d.txt", hash="h"), [chunk],
                             [Entity(key="ada", name="Ada Quillfeather"), Entity(key="marrowby", name="Marrowby")],
                             [Mention("ada", chunk.id), Mention("marrowby", chunk.id)],
                             [Relation("ada", "marrowby", chunk.id)])
        shutil.copy(snapshot, tmp_path / "other.sqlite.walk.npz")
        assert cached(other) == fresh(other) == ({"ada", "marrowby"}, [("ada", "marrowby", 1.0, "CO_OCCURS")])
        assert other._graph_cache.snapshot_loads == 0
    finally:
        other.close()
    snapshot.write_bytes(b"PK\x03\x04 not really a zip file")
    again = restarted(reader)
    try:
        assert cached(again) == fresh(again)
        assert (again._graph_cache.snapshot_loads, again._graph_cache.rebuilds) == (0, 1)
    finally:
        again.close()


def test_a_warmed_server_has_its_graph_in_memory_before_the_first_question(kb, components):
    from kgrag.server.app import create_app

    _, server, _ = kb  # a second process on the knowledge base the fixture ingested
    cache = server.graph._graph_cache
    assert cache.graph is None
    create_app(server.settings, server)  # warm=True: what /readyz waits for
    assert cache.graph is not None and cache.edges > 0
    assert (cache.snapshot_loads, cache.rebuilds) == (1, 0)  # the ingest's snapshot, not a rebuild
