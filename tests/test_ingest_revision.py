"""A document stored by another ingestion (other settings, an older kgrag) is rebuilt once,
with the real pipeline and the embedded stores; unchanged content under the same one is not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgrag.components import Components
from kgrag.config import Settings
from kgrag.ingest.revision import SEPARATOR, content_of, revision, stamped

PARAGRAPHS = [
    f"The harbor office in district {i} opens at {7 + i % 3} o'clock and handles permits for "
    f"fishing boats, ferries and the cargo lines that call at pier {i}. Its clerk, Anna Berg, "
    f"keeps the register of moorings and answers questions about fees and inspections."
    for i in range(12)
]


@pytest.fixture
def page(tmp_path) -> Path:
    path = tmp_path / "docs" / "harbor.md"
    path.parent.mkdir()
    path.write_text("# Harbor office\n\n" + "\n\n".join(PARAGRAPHS) + "\n", encoding="utf-8")
    return path


def _ingest(settings: Settings, embedder, recognizer, path: Path):
    comps = Components(settings, embedder=embedder, recognizer=recognizer)
    try:
        report = comps.ingest_job().run([path], progress=False)
        assert report.ok, report.failed
        (doc,) = comps.graph.list_documents()
        chunks = comps.chunk_index.count(searchable_only=True)
        return report, doc.hash, chunks
    finally:
        comps.close()


def test_changed_chunking_rebuilds_the_unchanged_file_once(tmp_path, page, embedder, recognizer):
    settings = Settings(data_dir=tmp_path / "kb")
    first, stored, chunks = _ingest(settings, embedder, recognizer, page)
    assert first.new and stored == stamped(content_of(stored), revision(settings))

    again, _, _ = _ingest(settings, embedder, recognizer, page)
    assert again.unchanged == 1 and again.rebuilt == [] and again.chunks_written == 0

    smaller = settings.model_copy(update={"chunking": settings.chunking.model_copy(
        update={"child_size": 300, "child_overlap": 50, "parent_size": 600})})
    rebuilt, stored_now, chunks_now = _ingest(smaller, embedder, recognizer, page)
    assert rebuilt.rebuilt == [first.new[0]] and rebuilt.changed == [] and rebuilt.unchanged == 0
    assert chunks_now > chunks, "the new chunk size was applied to the stored document"
    assert content_of(stored_now) == content_of(stored) and stored_now != stored

    stale_before = _stale(settings, embedder, recognizer)  # what the old settings see now
    settled, _, _ = _ingest(smaller, embedder, recognizer, page)
    assert settled.unchanged == 1 and settled.chunks_written == 0
    assert stale_before == [first.new[0]] and _stale(smaller, embedder, recognizer) == []


def _stale(settings: Settings, embedder, recognizer) -> list[str]:
    comps = Components(settings, embedder=embedder, recognizer=recognizer)
    try:
        return comps.stale_documents()
    finally:
        comps.close()


def test_a_document_stored_before_revisions_is_rebuilt_and_an_edit_is_a_change(tmp_path, page, embedder,
                                                                               recognizer):
    settings = Settings(data_dir=tmp_path / "kb")
    comps = Components(settings, embedder=embedder, recognizer=recognizer)
    try:
        old = comps.ingest_job()
        old.revision = None  # what every kgrag before stamped revisions stored: the content hash
        old.run([page], progress=False)
        (doc,) = comps.graph.list_documents()
        assert SEPARATOR not in doc.hash
    finally:
        comps.close()

    report, stored, _ = _ingest(settings, embedder, recognizer, page)
    assert report.rebuilt == [doc.id] and report.changed == [] and stored == stamped(doc.hash, revision(settings))

    page.write_text(page.read_text(encoding="utf-8") + "\nThe office is closed on holidays.\n", encoding="utf-8")
    edited, _, _ = _ingest(settings, embedder, recognizer, page)
    assert edited.changed == [doc.id] and edited.rebuilt == []


def test_the_revision_follows_what_is_stored_not_how_fast():
    base = Settings()
    same = [
        base.model_copy(update={"embedder": base.embedder.model_copy(update={"batch_size": 64, "engine": "torch"})}),
        base.model_copy(update={"extraction": base.extraction.model_copy(update={"ner_processes": 1})}),
    ]
    other = [
        base.model_copy(update={"embedder": base.embedder.model_copy(update={"name": "minilm"})}),
        base.model_copy(update={"extraction": base.extraction.model_copy(update={"terms": "off"})}),
        base.model_copy(update={"chunking": base.chunking.model_copy(update={"child_size": 500})}),
    ]
    assert {revision(s) for s in same} == {revision(base)}
    assert len({revision(s) for s in other} | {revision(base)}) == 4


def test_kgrag_stats_counts_the_documents_another_revision_built(tmp_path, page):
    from click.testing import CliRunner

    from kgrag.cli import main

    data = str(tmp_path / "kb")
    runner = CliRunner()
    assert runner.invoke(main, ["--data-dir", data, "ingest", "--no-progress", str(page)]).exit_code == 0
    fresh = runner.invoke(main, ["--data-dir", data, "stats", "--json"])
    assert json.loads(fresh.output)["stale_documents"] == 0
    env = {"KGRAG_CHUNKING__CHILD_SIZE": "300", "KGRAG_CHUNKING__CHILD_OVERLAP": "50"}
    changed = runner.invoke(main, ["--data-dir", data, "stats"], env=env)
    assert changed.exit_code == 0 and "stale_documents: 1" in changed.output
    assert "1 documents were built by another ingestion revision" in changed.output
