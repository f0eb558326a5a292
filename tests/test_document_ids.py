"""Document ids are relative to the folder or glob root ingested (or --root), never the working
directory: one file is one document wherever the ingest runs from."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kgrag.ingest.loaders import discover_files
from kgrag.ingest.roots import ROOTS_FILE
from kgrag.server.app import create_app
from kgrag.types import Document

FALCON = "# Falcon\n\nThe falcon project ships a telemetry gateway written in Rust.\n"
OWL = "# Owl\n\nThe owl project archives night-shift incident reports for ten years.\n"
KEY = "admin-key"


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "falcon.md").write_text(FALCON, encoding="utf-8")
    (docs / "sub" / "owl.md").write_text(OWL, encoding="utf-8")
    return docs


def _ids(components) -> set[str]:
    return {d.id for d in components.graph.list_documents()}


def test_ids_are_relative_to_the_folder_or_glob_root(tmp_path, monkeypatch):
    docs = _folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    for given in (["docs"], [str(docs)], ["docs/**/*.md"], [f"{docs}/**/*.md"]):
        files, errors = discover_files(given)
        assert not errors and sorted(f.id for f in files) == ["falcon.md", "sub/owl.md"], given
    monkeypatch.chdir(docs / "sub")
    files, _ = discover_files([str(docs)])
    assert sorted(f.id for f in files) == ["falcon.md", "sub/owl.md"]
    files, _ = discover_files(["*.md"])  # the glob's root is the working directory here
    assert [f.id for f in files] == ["owl.md"]
    # --root wins over the folder given; a file named alone is absolute unless under --root
    files, _ = discover_files([str(docs / "sub")], root=str(docs))
    assert [f.id for f in files] == ["sub/owl.md"]
    files, _ = discover_files(["owl.md"])
    assert [f.id for f in files] == [(docs / "sub" / "owl.md").as_posix()]
    files, _ = discover_files(["owl.md"], root=str(docs))
    assert [f.id for f in files] == ["sub/owl.md"]


def test_one_file_ingested_from_two_working_directories_is_one_document(components, tmp_path, monkeypatch):
    docs = _folder(tmp_path)
    job = components.ingest_job()
    monkeypatch.chdir(tmp_path)
    first = job.run(["docs"], progress=False)
    assert first.ok and sorted(first.new) == ["falcon.md", "sub/owl.md"]
    monkeypatch.chdir(docs / "sub")
    again = job.run([str(docs)], progress=False)
    assert again.ok and not again.new and again.unchanged == 2
    monkeypatch.chdir("/")
    by_glob = job.run([f"{docs}/**/*.md"], progress=False)
    assert by_glob.ok and not by_glob.new and by_glob.unchanged == 2
    # one changed file named alone, from yet another directory: it replaces its document (the
    # folder it lies under was ingested before), not a second copy under its absolute path
    (docs / "falcon.md").write_text(FALCON + "\nIt was renamed Peregrine in 2024.\n", encoding="utf-8")
    monkeypatch.chdir(docs)
    one = job.run(["falcon.md"], progress=False)
    assert one.ok and one.changed == ["falcon.md"] and not one.new
    assert _ids(components) == {"falcon.md", "sub/owl.md"}
    roots = json.loads((components.settings.data_dir / ROOTS_FILE).read_text(encoding="utf-8"))
    assert roots == [os.path.abspath(docs)]


def test_a_file_outside_any_root_keeps_its_absolute_path_from_anywhere(components, tmp_path, monkeypatch):
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "falcon.md").write_text(FALCON, encoding="utf-8")
    job = components.ingest_job()
    monkeypatch.chdir(tmp_path)
    assert job.run(["lone/falcon.md"], progress=False).new == [(lone / "falcon.md").as_posix()]
    monkeypatch.chdir(lone)
    again = job.run(["falcon.md"], progress=False)
    assert again.unchanged == 1 and not again.new
    assert _ids(components) == {(lone / "falcon.md").as_posix()}


def test_documents_stored_under_working_directory_ids_are_renamed(components, tmp_path, monkeypatch):
    """A knowledge base built by an older kgrag holds ``docs/falcon.md`` (relative to the working
    directory it ran in): ingesting the folder again stores ``falcon.md`` and deletes the old one."""
    _folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    job = components.ingest_job()
    old = [Document(id=f"docs/{name}", source=f"docs/{name}", title=name, text=text, hash=f"old-{name}", format="md")
           for name, text in (("falcon.md", FALCON), ("sub/owl.md", OWL))]
    assert job.run_documents(old).ok
    assert _ids(components) == {"docs/falcon.md", "docs/sub/owl.md"}
    report = job.run(["docs"], progress=False)
    assert report.ok and report.renamed == {"docs/falcon.md": "falcon.md", "docs/sub/owl.md": "sub/owl.md"}
    assert _ids(components) == {"falcon.md", "sub/owl.md"}
    hits = components.retriever.retrieve("Which project archives incident reports?").hits
    assert {h.chunk.doc_id for h in hits} <= {"falcon.md", "sub/owl.md"}


def test_delete_by_http_takes_any_id_and_answers_json(components):
    settings = components.settings.model_copy(
        update={"server": components.settings.server.model_copy(update={"api_key": KEY})})
    client = create_app(settings, components).test_client()
    headers = {"X-API-Key": KEY}
    doc = {"id": "/tmp/docs/falcon.md", "title": "Falcon", "format": "md", "text": FALCON}
    assert client.post("/v1/documents", json={"documents": [doc]}, headers=headers).status_code == 201
    resp = client.delete("/v1/documents//tmp/docs/falcon.md", headers=headers)
    assert resp.status_code == 200 and resp.get_json() == {"deleted": "/tmp/docs/falcon.md"}
    gone = client.delete("/v1/documents//tmp/docs/falcon.md", headers=headers)
    assert gone.status_code == 404 and gone.is_json
    assert gone.get_json()["error"]["code"] == "not_found" and "/tmp/docs/falcon.md" in gone.get_json()["error"]["message"]
    for path in ("/v1/documents/a//b.md", "/v1/documents/%2Fsrv%2Fx.md"):
        resp = client.delete(path, headers=headers)
        assert resp.status_code == 404 and resp.is_json, (path, resp.get_data(as_text=True))
