"""Repair that loses nothing (issue 47): after a store file is lost or damaged, ``kgrag check
--repair`` gives back every document (files, uploads and JSON-posted texts), the curated names
and the audit log, equal to what they were before; what no source can bring back is removed
only after the knowledge base is backed up; a garbage journal is set aside with a note.

Real stores, the session's models, the real app (Flask's test client) for uploads, posted
texts and alias changes, ``kgrag.repair.repair`` as ``kgrag check --repair`` runs it."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sqlite3

import pytest

from kgrag.components import Components
from kgrag.ingest.sources import Sources
from kgrag.repair import repair
from kgrag.server.app import create_app
from tests.conftest import TWO_HOP, write_jsonl

KEY = "repair-test-key"
ADMIN = {"X-API-Key": KEY}
FILES = {
    "heap.md": "# Binary heap\n\nA binary heap keeps the smallest key at its root. Each parent is no larger than "
               "its children.\n",
    "lca.md": "# Tree algorithms\n\nIn a rooted tree, the Lowest Common Ancestor of two nodes is the deepest node "
              "that has both as descendants.\n",
}


def _settings(settings):
    return settings.model_copy(update={"server": settings.server.model_copy(update={"api_key": KEY})})


@pytest.fixture
def kb(tmp_path, settings, embedder, recognizer, monkeypatch):
    """A knowledge base built every way there is: ``kgrag ingest`` of a folder (as the CLI does
    it: the run's paths are recorded), an upload, JSON-posted texts, curated names (added,
    imported) and their audit log."""
    monkeypatch.chdir(tmp_path)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in FILES.items():
        (corpus / name).write_text(text, encoding="utf-8")
    write_jsonl(corpus / "two_hop.jsonl", TWO_HOP)
    comps = Components(_settings(settings), embedder=embedder, recognizer=recognizer)
    report = comps.ingest_job().run([corpus], progress=False)
    assert report.ok and len(report.new) == 4
    Sources(settings.data_dir).record_ingest([corpus])
    client = create_app(comps.settings, comps, warm=False).test_client()
    upload = {"file": [(io.BytesIO("# 最近公共祖先\n\n树中两个节点的最近公共祖先是同时以它们为后代的最深的节点。".encode()), "zh.md")]}
    assert client.post("/v1/documents", data=upload, headers=ADMIN, content_type="multipart/form-data").status_code == 201
    posted = {"documents": [
        {"id": "memo-1", "title": "Harbour memo", "text": "The Vormsi harbour opens at six from May to September.",
         "metadata": {"tags": ["ops"]}},
        {"id": "memo-2", "text": "Ferry tickets for Vormsi are sold at the Rohuküla terminal.", "format": "md"},
    ]}
    assert client.post("/v1/documents", json=posted, headers=ADMIN).status_code == 201
    added = client.post("/v1/entities/LCA/aliases", json={"aliases": ["最近公共祖先", "Lowest Common Ancestor"]},
                        headers=ADMIN)
    assert added.status_code == 201, added.get_json()
    glossary = "canonical,type,aliases\nBinary heap,CONCEPT,heap|二叉堆\nVormsi,PLACE,Vormsi island\n"
    imported = client.post("/v1/entities/_import", data=glossary.encode(), content_type="text/csv", headers=ADMIN)
    assert imported.status_code == 201, imported.get_json()
    yield comps, corpus
    comps.close()


def digest(comps) -> dict[str, str]:
    """What must come back, by part: every document (record and chunks), the curated entities
    (name, type, aliases) and the audit log."""
    docs = sorted((d.id, d.source, d.title, d.hash, d.format, json.dumps(d.metadata, sort_keys=True))
                  for d in comps.graph.list_documents())
    chunks = sorted((c.id, c.doc_id, c.text, c.section_path, json.dumps(c.metadata, sort_keys=True))
                    for c, _ in comps.chunk_index.iter_chunks())
    curated = sorted((e.key, e.name, e.type, sorted(e.aliases)) for e in comps.graph.curated_entities())
    audit = [(a.at, a.who, a.action, a.target, a.details) for a in comps.graph.audit.audit_log(10**6)]
    parts = {"documents": docs, "chunks": chunks, "curated": curated, "audit": audit}
    return {k: hashlib.sha256(json.dumps(v, ensure_ascii=False).encode()).hexdigest() for k, v in parts.items()}


def _lose(path, how: str) -> None:
    if how == "removed":
        for p in path.parent.glob(path.name + "*"):
            p.unlink()
    else:  # bytes overwritten in the middle: the file opens, its pages are garbage
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = path.stat().st_size
        with open(path, "r+b") as f:
            f.seek(4096)
            f.write(os.urandom(size - 8192))


@pytest.mark.parametrize("how", ["removed", "overwritten"])
@pytest.mark.parametrize("name", ["graph.sqlite", "chunks.sqlite"])
def test_repair_after_losing_a_store_gives_everything_back(kb, settings, name, how):
    """Before: after graph.sqlite was lost, ``check --repair`` removed every chunk as an orphan
    (JSON-posted documents had no other copy; curated aliases and the audit log went too);
    after chunks.sqlite was lost, it dropped the documents."""
    comps, _ = kb
    before = digest(comps)
    ids = {d.id for d in comps.graph.list_documents()}
    assert {"memo-1", "memo-2", "uploads/zh.md"} <= ids and len(ids) == 7
    comps.close()
    _lose(settings.data_dir / name, how)
    report = repair(_settings(settings), embedder=comps.embedder, recognizer=comps.recognizer)
    assert report.ok, report.to_dict()
    assert set(report.rebuilt) == ids and not report.removed_orphans and not report.dropped_documents
    if how == "overwritten":
        assert name in report.set_aside and (settings.data_dir / "backups").is_dir()
    after = Components(_settings(settings), embedder=comps.embedder, recognizer=comps.recognizer)
    try:
        assert digest(after) == before
        app = create_app(after.settings, after, warm=False)
        app.config["KGRAG_WARM"] = True
        client = app.test_client()
        assert client.get("/readyz").status_code == 200
        hits = client.post("/v1/retrieve", json={"question": "When does the Vormsi harbour open?"}).get_json()["hits"]
        assert hits[0]["doc_id"] == "memo-1"
    finally:
        after.close()


def test_what_no_source_holds_is_removed_only_after_a_backup(kb, settings):
    comps, corpus = kb
    comps.close()
    (corpus / "heap.md").unlink()  # its only source is gone
    _lose(settings.data_dir / "graph.sqlite", "removed")
    # A file where the backups folder must go: the backup cannot be made, so nothing is removed.
    (settings.data_dir / "backups").write_text("not a folder")
    refused = repair(_settings(settings), embedder=comps.embedder, recognizer=comps.recognizer)
    assert not refused.ok and refused.not_removed and "backing the knowledge base up" in refused.not_removed
    assert refused.without_source == ["heap.md"]  # its id: relative to the folder ingested
    assert refused.remaining["orphaned"] == refused.without_source  # kept, not removed
    (settings.data_dir / "backups").unlink()
    done = repair(_settings(settings), embedder=comps.embedder, recognizer=comps.recognizer)
    assert done.ok and done.removed_orphans == refused.without_source, done.to_dict()
    backup = next((settings.data_dir / "backups").iterdir())
    with sqlite3.connect(backup / "chunks.sqlite") as conn:  # the removed chunks are in the backup
        kept = conn.execute("SELECT count(*) FROM chunks WHERE doc_id = ?", (done.removed_orphans[0],)).fetchone()[0]
    assert kept > 0 and "heap.md" in (backup / "NOTE.txt").read_text()


def test_a_garbage_journal_is_set_aside_with_a_note(kb, settings):
    """Before: a garbage journal.sqlite blocked every ingest and every repair."""
    comps, _ = kb
    before = digest(comps)
    comps.close()
    (settings.data_dir / "journal.sqlite").write_bytes(os.urandom(16384))
    report = repair(_settings(settings), embedder=comps.embedder, recognizer=comps.recognizer)
    assert report.ok and "journal.sqlite" in report.set_aside, report.to_dict()
    folder = settings.data_dir / "backups"
    kept = [p.name for p in next(folder.iterdir()).iterdir()]
    assert "journal.sqlite" in kept and "NOTE.txt" in kept
    after = Components(_settings(settings), embedder=comps.embedder, recognizer=comps.recognizer)
    try:
        assert digest(after) == before
    finally:
        after.close()


def test_curated_names_and_the_audit_log_can_be_backed_up_and_re_applied(kb, settings, tmp_path):
    from click.testing import CliRunner

    from kgrag.cli import main

    comps, _ = kb
    before = digest(comps)
    comps.close()
    saved = tmp_path / "curation-backup.json"
    run = CliRunner().invoke(main, ["--data-dir", str(settings.data_dir), "aliases", "backup", str(saved)])
    assert run.exit_code == 0 and "3 curated entities" in run.output, run.output
    # Into a knowledge base rebuilt from the same sources without them, then re-applied.
    shutil.rmtree(settings.data_dir / "backups", ignore_errors=True)
    (settings.data_dir / "curation.json").unlink()
    _lose(settings.data_dir / "graph.sqlite", "removed")
    report = repair(_settings(settings), embedder=comps.embedder, recognizer=comps.recognizer)
    assert report.ok and not report.restored
    run = CliRunner().invoke(main, ["--data-dir", str(settings.data_dir), "aliases", "restore", str(saved)])
    assert run.exit_code == 0, run.output
    again = CliRunner().invoke(main, ["--data-dir", str(settings.data_dir), "aliases", "restore", str(saved)])
    assert "re-applied 0 curated entities and 0 audit entries" in again.output  # idempotent
    after = Components(_settings(settings), embedder=comps.embedder, recognizer=comps.recognizer)
    try:
        now = digest(after)
        assert (now["curated"], now["audit"], now["documents"]) == (before["curated"], before["audit"],
                                                                     before["documents"])
    finally:
        after.close()
