"""The consistency check and repair on damaged embedded stores: a database file removed under
a running server, random bytes written into both files, a truncated chunk index. ``/readyz``
names the cause (503, JSON), ``kgrag check`` reports it (exit 1), and a re-ingest or
``kgrag check --repair`` brings the knowledge base back to one that agrees with itself
(tests/test_repair.py: that nothing is lost on the way)."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
from click.testing import CliRunner

from kgrag.cli import main
from kgrag.components import Components
from kgrag.server.app import create_app
from kgrag.stores.consistency import PendingWrite, compare_stores, plan_recovery
from tests.conftest import hotpot_corpus, ingested_corpus

N_DOCS = 4


@pytest.fixture
def corpus(tmp_path):
    return hotpot_corpus(tmp_path, N_DOCS)


@pytest.fixture
def ingested(components, corpus):
    return ingested_corpus(components, corpus, N_DOCS)


def _ready(components) -> tuple[int, dict]:
    app = create_app(components.settings, components, warm=False)
    app.config["KGRAG_WARM"] = True  # the models are the session's, already loaded
    resp = app.test_client().get("/readyz")
    return resp.status_code, resp.get_json()


def _check(settings, *args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["--data-dir", str(settings.data_dir), "check", "--json", *args])
    return result.exit_code, json.loads(result.output.strip().splitlines()[-1])


def _fresh(settings, components) -> Components:
    """The same data dir opened anew (a restarted server or another process)."""
    return Components(settings, embedder=components.embedder, recognizer=components.recognizer)


# -- the rules, engine-free -------------------------------------------------------------------
def test_plan_recovery_follows_the_graphs_hash():
    pending = [PendingWrite("a", "new"), PendingWrite("b", "new"), PendingWrite("c", ""), PendingWrite("d", "")]
    plan = plan_recovery(pending, {"a": "new", "b": "old", "c": "h"})
    assert [e.doc_id for e in plan.roll_forward] == ["a", "d"]  # a: replace committed; d: delete committed
    assert [e.doc_id for e in plan.discard] == ["b", "c"]


def test_compare_stores_names_mismatched_and_orphaned_documents():
    diff = compare_stores({"a": {"a#0"}, "b": {"b#0", "b#1"}, "e": set()},
                          {"a": {"a#0"}, "b": {"b#0"}, "x": {"x#0"}}, [PendingWrite("a", "h")])
    assert (diff.mismatched, diff.orphaned, diff.pending) == (["b"], ["x"], ["a"])
    assert not diff.ok and "1 documents without their chunks" in diff.describe()
    assert compare_stores({"a": {"a#0"}}, {"a": {"a#0"}}).ok


# -- damaged files ----------------------------------------------------------------------------
def test_ready_when_the_stores_agree(ingested):
    status, body = _ready(ingested)
    assert status == 200 and body["status"] == "ready" and body["documents"] == N_DOCS
    assert _check(ingested.settings) == (0, {"ok": True, "problems": [], "mismatched": [], "orphaned": [],
                                             "pending": []})


def test_graph_file_removed_under_a_running_server(ingested):
    os.remove(ingested.settings.data_dir / "graph.sqlite")
    status, body = _ready(ingested)
    assert status == 503 and body["status"] == "unavailable"
    assert "graph.sqlite was removed since the store opened it" in body["reason"]
    assert str(ingested.settings.data_dir) not in body["reason"]


def test_graph_file_removed_then_restart_reports_orphans_and_repair_rebuilds_them(ingested, settings):
    """Before issue 47 the repair removed the orphaned chunks; it now reads their documents
    again from the source path the chunks record (the corpus file is still there)."""
    ingested.close()
    os.remove(settings.data_dir / "graph.sqlite")
    restarted = _fresh(settings, ingested)
    try:
        status, body = _ready(restarted)
        assert status == 503 and f"{N_DOCS} chunk sets without a document" in body["reason"]
        assert restarted.chunk_index.count() > 0  # the server itself deletes nothing
    finally:
        restarted.close()
    code, found = _check(settings)
    assert code == 1 and len(found["orphaned"]) == N_DOCS
    code, repaired = _check(settings, "--repair")
    assert code == 0 and repaired["ok"] and not repaired["removed_orphans"], repaired
    assert len(repaired["rebuilt"]) == N_DOCS
    assert _check(settings)[0] == 0


def test_random_bytes_in_both_files_make_readyz_fail_and_queries_503(ingested):
    for name in ("chunks.sqlite", "graph.sqlite"):
        path = ingested.settings.data_dir / name
        with sqlite3.connect(path) as conn:  # move the WAL into the file, so the bytes hit tables
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = path.stat().st_size
        assert size > 16384
        with open(path, "r+b") as f:  # every page after the first (the header) and before the last
            f.seek(4096)
            f.write(os.urandom(size - 8192))
    status, body = _ready(ingested)
    assert status == 503 and body["status"] == "unavailable"
    assert "quick_check" in body["reason"] or "malformed" in body["reason"], body
    app = create_app(ingested.settings, ingested, warm=False)
    resp = app.test_client().post("/v1/query", json={"question": "Who directed the film?", "modes": ["bm25"]})
    assert resp.status_code in (500, 503) and resp.get_json()["error"]["code"] != "invalid_request"
    assert _check(ingested.settings)[0] == 1


def test_empty_chunk_file_is_repaired_by_reingesting(ingested, settings, corpus):
    before = {**ingested.graph.stats(), "indexed_chunks": ingested.chunk_index.count(searchable_only=True)}
    ingested.close()
    (settings.data_dir / "chunks.sqlite").write_bytes(b"")
    for suffix in ("-wal", "-shm"):
        (settings.data_dir / f"chunks.sqlite{suffix}").unlink(missing_ok=True)
    restarted = _fresh(settings, ingested)
    try:
        status, body = _ready(restarted)
        assert status == 503 and f"{N_DOCS} documents without their chunks" in body["reason"]
        report = restarted.ingest_job().run([corpus], progress=False)  # what `kgrag ingest` runs
        assert report.ok and len(report.changed) == N_DOCS and report.unchanged == 0
        after = {**restarted.graph.stats(), "indexed_chunks": restarted.chunk_index.count(searchable_only=True)}
        # Re-processed documents are extracted with the gazetteer of the whole graph (as any
        # changed document is), so mentions may grow; documents and chunks are as before.
        assert {k: after[k] for k in ("documents", "chunks", "indexed_chunks")} == {
            k: before[k] for k in ("documents", "chunks", "indexed_chunks")}
        assert _ready(restarted)[0] == 200
    finally:
        restarted.close()
    assert _check(settings)[0] == 0


def test_readyz_ignores_a_write_in_flight_but_names_one_left_by_a_crash(ingested, settings):
    from kgrag.stores.sqlite.journal import SqliteWriteJournal

    other = SqliteWriteJournal(settings.data_dir / "journal.sqlite")  # another writer, as a CLI ingest is
    try:
        with other.writing():
            other.begin("in-flight", "h")  # mid-write: pending entry, stores not yet agreeing
            assert _ready(ingested)[0] == 200
        status, body = _ready(ingested)  # the writer is gone and left its entry: a crash
        assert status == 503 and "1 unfinished writes: 'in-flight'" in body["reason"]
        assert _check(settings, "--repair")[1]["discarded"] == ["in-flight"]  # never committed
        assert _ready(ingested)[0] == 200
    finally:
        other.close()
