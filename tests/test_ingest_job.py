"""The ingestion job end to end on the embedded stores with the real shipped models."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kgrag.ingest.loaders import document_id
from kgrag.text.normalize import normalize_alias
from tests.conftest import hotpot_records, write_jsonl

N_DOCS = 40


def _db_digest(settings) -> str:
    h = hashlib.sha256()
    for name in sorted(os.listdir(settings.data_dir)):
        h.update(name.encode())
        h.update((settings.data_dir / name).read_bytes())
    return h.hexdigest()


def _all_entity_keys(graph) -> set[str]:
    return {k for keys in graph.alias_table().values() for k in keys}


def _assert_no_orphans(graph) -> None:
    keys = sorted(_all_entity_keys(graph))
    mentions = graph.mentions_of(keys)
    orphans = [k for k in keys if not mentions.get(k) and not graph.get_entity(k).curated]
    assert orphans == []


@pytest.fixture
def corpus(tmp_path) -> Path:
    return write_jsonl(tmp_path / "corpus.jsonl", hotpot_records(N_DOCS))


def test_reingest_is_a_no_op_and_edit_reprocesses_one_document(components, corpus, settings):
    job = components.ingest_job()
    first = job.run([corpus], progress=False)
    assert first.ok, first.failed
    assert len(first.new) == N_DOCS and first.unchanged == 0
    stats = components.graph.stats()
    assert stats["documents"] == N_DOCS
    assert stats["entities"] > 50 and stats["relations"] > 50 and stats["mentions"] > stats["entities"] * 0.9
    assert components.chunk_index.count(searchable_only=True) == first.chunks_written

    components.close()
    digest = _db_digest(settings)
    comps2 = type(components)(settings, embedder=components.embedder, recognizer=components.recognizer)
    second = comps2.ingest_job().run([corpus], progress=False)
    assert second.unchanged == N_DOCS and second.new == [] and second.changed == []
    assert second.chunks_written == 0
    assert comps2.graph.stats() == stats
    comps2.close()
    assert _db_digest(settings) == digest, "an unchanged re-ingest must write nothing"

    records = hotpot_records(N_DOCS)
    records[7]["text"] += " This sentence was added by an edit."
    write_jsonl(corpus, records)
    comps3 = type(components)(settings, embedder=components.embedder, recognizer=components.recognizer)
    third = comps3.ingest_job().run([corpus], progress=False)
    assert third.changed == [records[7]["id"]]
    assert third.new == [] and third.unchanged == N_DOCS - 1
    edited = comps3.chunk_index.get([f"{records[7]['id']}#c0"])
    assert edited and "added by an edit" in edited[0].text
    assert comps3.graph.stats()["documents"] == N_DOCS
    comps3.close()


def test_delete_leaves_no_chunk_mention_or_orphan(components, corpus):
    job = components.ingest_job()
    job.run([corpus], progress=False)
    graph, index = components.graph, components.chunk_index
    before = graph.stats()
    victim = hotpot_records(N_DOCS)[3]["id"]
    victim_chunks = [f"{victim}#c0"]
    assert index.get(victim_chunks), "the passage was indexed as one chunk"
    victim_entities = graph.chunk_entities(victim_chunks)[victim_chunks[0]]
    assert victim_entities, "the passage mentions entities"
    victim_mentions = sum(
        count for key in victim_entities for cid, count in graph.mentions_of([key])[key] if cid in victim_chunks
    )
    assert victim_mentions >= len(victim_entities)

    assert job.delete(victim) is True
    after = graph.stats()
    assert after["documents"] == before["documents"] - 1
    assert after["chunks"] == before["chunks"] - 1
    assert index.count() == before["chunks"] - 1
    assert index.get(victim_chunks) == []
    assert victim not in index.document_ids()
    assert graph.get_document(victim) is None
    # every mention row of the deleted chunk is gone, nothing else
    assert after["mentions"] == before["mentions"] - len(victim_entities)
    remaining = graph.mentions_of(sorted(victim_entities))
    assert all(cid not in victim_chunks for rows in remaining.values() for cid, _ in rows)
    _assert_no_orphans(graph)
    # and searches never return it
    hits = index.search_bm25(hotpot_records(N_DOCS)[3]["title"], k=50)
    assert all(h.id not in victim_chunks for h in hits)
    assert job.delete(victim) is False


GLOSSARY = "LCA; Lowest Common Ancestor; 最近公共祖先\n"


def test_glossary_aliases_are_one_entity(components, tmp_path):
    from kgrag.lexicon.glossary import load_glossary

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "en.txt").write_text(
        "In graph theory, the Lowest Common Ancestor of two nodes v and w in a tree is the deepest node "
        "that has both v and w as descendants.",
        encoding="utf-8",
    )
    (docs / "abbr.md").write_text("# Queries\n\nAn LCA query can be answered in constant time after linear preprocessing.\n", encoding="utf-8")
    (docs / "zh.txt").write_text("在图论中，最近公共祖先是指树中两个节点共同的祖先里深度最大的那个节点。", encoding="utf-8")
    glossary = tmp_path / "glossary.txt"
    glossary.write_text(GLOSSARY, encoding="utf-8")

    report = components.ingest_job().run([docs], glossary_entities=load_glossary(glossary), progress=False)
    assert report.ok, report.failed
    graph = components.graph
    key = normalize_alias("LCA")
    for alias in ("LCA", "Lowest Common Ancestor", "最近公共祖先", "lowest common ancestor"):
        assert graph.lookup_aliases([normalize_alias(alias)])[normalize_alias(alias)] == [key]
    mentioned_docs = {cid.split("#")[0] for cid, _ in graph.mentions_of([key])[key]}
    assert mentioned_docs == {document_id(docs / n, docs) for n in ("en.txt", "abbr.md", "zh.txt")}


def _make_bad_files(folder: Path) -> None:
    (folder / "corrupt.pdf").write_bytes(b"%PDF-1.7\n" + os.urandom(2000))
    (folder / "broken-link.txt").symlink_to(folder / "does-not-exist.txt")
    (folder / "diagram.vsdx").write_bytes(b"PK\x03\x04 not really a drawing")


def test_bad_files_reported_good_files_ingested(tmp_path, settings):
    write_jsonl(tmp_path / "corpus.jsonl", hotpot_records(5))
    (tmp_path / "notes.md").write_text("# Notes\n\nMoscow State University was founded in 1755.\n", encoding="utf-8")
    _make_bad_files(tmp_path)
    env = {**os.environ, "KGRAG_DATA_DIR": str(settings.data_dir)}
    proc = subprocess.run(
        [sys.executable, "-m", "kgrag.cli", "ingest", str(tmp_path), str(tmp_path / "diagram.vsdx"),
         str(tmp_path / "broken-link.txt"), "--json", "--no-progress"],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    failed = {Path(f["path"]).name: f["reason"] for f in out["failed"]}
    assert set(failed) == {"corrupt.pdf", "broken-link.txt", "diagram.vsdx"}
    assert "PDF" in failed["corrupt.pdf"]
    assert "unsupported" in failed["diagram.vsdx"]
    assert out["documents"]["new"] == 6 and out["documents"]["failed"] == 3
    assert out["totals"]["documents"] == 6


def _graph_documents(path: Path) -> int:
    from kgrag.stores.sqlite.graph import SqliteGraphStore

    if not path.exists():
        return 0
    store = SqliteGraphStore(path)
    try:
        return store.stats()["documents"]
    finally:
        store.close()


@pytest.mark.slow
def test_sigkill_mid_ingest_then_rerun_equals_clean_run(tmp_path, components):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", hotpot_records(400))
    killed_dir = tmp_path / "killed"
    env = {**os.environ, "KGRAG_DATA_DIR": str(killed_dir)}
    cmd = [sys.executable, "-m", "kgrag.cli", "ingest", str(corpus), "--no-progress", "--json"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    written = 0
    while time.time() < deadline and proc.poll() is None:
        written = _graph_documents(killed_dir / "graph.sqlite")
        if written >= 30:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the ingest finished before it could be killed; use a bigger corpus"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = _graph_documents(killed_dir / "graph.sqlite")
    assert 30 <= partial < 400, partial

    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    rerun_report = json.loads(rerun.stdout)
    assert rerun_report["documents"]["unchanged"] >= partial

    clean = components.ingest_job().run([corpus], progress=False)
    assert clean.ok
    clean_totals = {**components.graph.stats(), "indexed_chunks": components.chunk_index.count(searchable_only=True)}
    assert rerun_report["totals"] == clean_totals


def test_ingest_links_lower_case_glossary_terms(components, tmp_path):
    from kgrag.lexicon.glossary import load_glossary

    glossary = tmp_path / "glossary.txt"
    glossary.write_text("Heap; binary heap\nIT; information technology\n", encoding="utf-8")
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [
        {"id": "d1", "title": "Priority queues", "text": "A priority queue is usually kept in a heap, and it is fast."}])
    report = components.ingest_job().run([corpus], glossary_entities=load_glossary(glossary), progress=False)
    assert not report.failed, report.failed
    mentions = components.graph.mentions_of(["heap", "it"])
    assert [chunk for chunk, _ in mentions.get("heap", [])] == ["d1#c0"]
    assert mentions.get("it", []) == []  # a curated stop word still needs capitals


def test_progress_is_reported_per_document_not_per_group(components, tmp_path):
    """Twelve one-chunk passages fit in one embedding group; progress still comes once per
    document, counting up, each with the chunks written so far."""
    events = []
    corpus = write_jsonl(tmp_path / "twelve.jsonl", hotpot_records(12))
    report = components.ingest_job().run([corpus], progress=False, on_document=events.append)
    assert [e.done for e in events] == list(range(1, 13)) and {e.total for e in events} == {12}
    assert [e.doc_id for e in events] == [r["id"] for r in hotpot_records(12)]
    assert all(e.ok for e in events) and events[-1].chunks_written == report.chunks_written
    assert [e.chunks_written for e in events] == sorted(e.chunks_written for e in events)
    again = []
    components.ingest_job().run([corpus], progress=False, on_document=again.append)
    assert again == []  # nothing pending, nothing to report
