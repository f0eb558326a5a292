"""Fault injection at every step of the write protocol (``kgrag.stores.consistency``), for
insert, update and delete, on the embedded stores and on the Neo4j adapter over the real Neo4j 5.

A fault is the real store method raising at its step boundary: before it runs ("before") or
after it returned ("after", what a lost reply or a crash right after a commit looks like). After
the fault the document is its old version in both stores or its new version in both (never
neither, never a mix once the write settled); after a re-run of the same operation the
knowledge base equals one made by the same operations without a fault (a digest of every
store's content).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from kgrag.errors import StoreError
from kgrag.ingest.job import IngestJob
from kgrag.ingest.loaders.base import content_hash
from kgrag.ingest.revision import content_of
from kgrag.stores.sqlite.chunks import SqliteChunkIndex
from kgrag.stores.sqlite.graph import SqliteGraphStore
from kgrag.stores.sqlite.journal import SqliteWriteJournal
from kgrag.types import Document
from tests.neo4j_servers import fresh_store, neo4j_server


class Fault(StoreError):
    """The injected failure: a store failing, as the adapters report it."""


def _doc(doc_id: str, text: str, title: str) -> Document:
    return Document(id=doc_id, source=doc_id, title=title, text=text, hash=content_hash(title, text, "txt"))


HARBOR_V1 = _doc("harbor", "Glass Harbor is a 2011 Estonian drama film directed by Maret Kuusik. "
                 "It follows a lighthouse keeper on the island of Vormsi.", "Glass Harbor")
HARBOR_V2 = _doc("harbor", "Glass Harbor is a 2012 Finnish comedy directed by Aino Lehto. "
                 "It was filmed in Turku and on the island of Utö over one summer.", "Glass Harbor")
KUUSIK = _doc("kuusik", "Maret Kuusik is a film director born in Tartu in 1974. "
              "She studied cinematography in Tallinn.", "Maret Kuusik")
NEW = _doc("lehto", "Aino Lehto is a Finnish director who studied in Helsinki and Turku.", "Aino Lehto")


@dataclass(frozen=True)
class Operation:
    name: str
    run: Callable[[IngestJob], object]
    doc_id: str
    old: Document | None  # the version before (None: a new document)
    new: Document | None  # the version after (None: deleted)


OPERATIONS = {
    "insert": Operation("insert", lambda job: job.run_documents([NEW]), "lehto", None, NEW),
    "update": Operation("update", lambda job: job.run_documents([HARBOR_V2]), "harbor", HARBOR_V1, HARBOR_V2),
    "delete": Operation("delete", lambda job: job.delete("kuusik"), "kuusik", KUUSIK, None),
}
# (object attribute of the job, method) in protocol order; the graph step is the commit point.
WRITE_STEPS = [("journal", "begin"), ("graph", "write_document"), ("chunk_index", "replace_document"),
               ("journal", "finish")]
DELETE_STEPS = [("journal", "begin"), ("graph", "delete_document"), ("chunk_index", "delete_document"),
                ("journal", "finish")]
COMMIT = 1  # index of the graph step


def _cases() -> list:
    out = []
    for op in OPERATIONS:
        steps = DELETE_STEPS if op == "delete" else WRITE_STEPS
        for index, (part, method) in enumerate(steps):
            for when in ("before", "after"):
                out.append(pytest.param(op, index, part, method, when, id=f"{op}-{when}-{part}.{method}"))
    return out


def _inject(monkeypatch, target: object, method: str, when: str, doc_id: str) -> list[str]:
    """Make ``target.method`` raise Fault once, before or after running, on a call about
    ``doc_id``; returns the list the fault is recorded in."""
    real = getattr(target, method)
    fired: list[str] = []

    def faulty(*args, **kwargs):
        about = args[0].id if isinstance(args[0], Document) else args[0]
        if fired or about != doc_id:
            return real(*args, **kwargs)
        fired.append(f"{when} {method}")
        if when == "before":
            raise Fault(f"injected before {method}")
        real(*args, **kwargs)
        raise Fault(f"injected after {method}")

    monkeypatch.setattr(target, method, faulty)
    return fired


# -- the knowledge base as content ------------------------------------------------------------
def kb_digest(job: IngestJob) -> str:
    """Every chunk (fields, rounded vector) and the graph's export of every document, curated
    entities, alias table and counts: equal digests = equal knowledge bases."""
    h = hashlib.sha256()
    for chunk, vec in sorted(job.chunk_index.iter_chunks(), key=lambda cv: cv[0].id):
        h.update(json.dumps(chunk.__dict__, sort_keys=True, ensure_ascii=False).encode())
        h.update(b"-" if vec is None else json.dumps([round(float(x), 3) for x in vec]).encode())
    graph = job.graph
    for doc in graph.list_documents():
        content = graph.export_document(doc.id)
        h.update(repr(content).encode())
    h.update(json.dumps(graph.alias_table(), sort_keys=True).encode())
    h.update(json.dumps(graph.stats(), sort_keys=True).encode())
    h.update(json.dumps(sorted(e.doc_id for e in job.journal.pending())).encode())
    return h.hexdigest()


def version_seen(job: IngestJob, doc_id: str) -> tuple[str | None, str | None]:
    """(the hash the graph records, the hash of the text the index's chunks hold) for doc_id;
    the second is None when the index holds none of its chunks."""
    graph_doc = job.graph.get_document(doc_id)
    ids = sorted(job.chunk_index.chunk_ids_by_document().get(doc_id, set()))
    texts = " ".join(c.text for c in job.chunk_index.get(ids) if not c.is_parent)
    index_version = None
    for doc in (HARBOR_V1, HARBOR_V2, KUUSIK, NEW):
        if doc.id == doc_id and _same_text(texts, doc.text):
            index_version = doc.hash
    if ids and index_version is None:
        index_version = "unknown text"
    return (graph_doc.hash if graph_doc else None), index_version


def _same_text(chunk_texts: str, text: str) -> bool:
    return " ".join(chunk_texts.split()) == " ".join(text.split())


# -- backends ---------------------------------------------------------------------------------
@contextmanager
def embedded_job(root: Path, components) -> Iterator[IngestJob]:
    root.mkdir(parents=True)
    chunks = SqliteChunkIndex(root / "chunks.sqlite")
    graph = SqliteGraphStore(root / "graph.sqlite")
    journal = SqliteWriteJournal(root / "journal.sqlite")
    try:
        yield _job(components, chunks, graph, journal)
    finally:
        for store in (chunks, graph, journal):
            store.close()


@contextmanager
def neo4j_job(root: Path, components) -> Iterator[IngestJob]:
    root.mkdir(parents=True)
    chunks = SqliteChunkIndex(root / "chunks.sqlite")
    journal = SqliteWriteJournal(root / "journal.sqlite")
    try:
        with fresh_store(neo4j_server(), "crash_safety") as graph:
            yield _job(components, chunks, graph, journal)
    finally:
        chunks.close()
        journal.close()


def _job(components, chunks, graph, journal) -> IngestJob:
    return IngestJob(chunks, graph, components.chunker(), embedder_factory=lambda: components.embedder,
                     extractor_factory=lambda: components.build_extractor(graph), journal=journal)


BACKENDS = {"embedded": embedded_job, "neo4j": neo4j_job}


def _seed(job: IngestJob) -> None:
    report = job.run_documents([HARBOR_V1, KUUSIK])
    assert report.ok and sorted(report.new) == ["harbor", "kuusik"]


_reference: dict[tuple[str, str], str] = {}


def reference_digest(backend: str, op: Operation, tmp_path: Path, components) -> str:
    """The knowledge base after seed + the operation, no fault (once per backend and operation)."""
    if (backend, op.name) not in _reference:
        with BACKENDS[backend](tmp_path / "reference", components) as job:
            _seed(job)
            op.run(job)
            _reference[(backend, op.name)] = kb_digest(job)
    return _reference[(backend, op.name)]


def _check_fault_then_rerun(backend, op_name, step, part, method, when, tmp_path, components, monkeypatch):
    op = OPERATIONS[op_name]
    expected = reference_digest(backend, op, tmp_path, components)
    with BACKENDS[backend](tmp_path / "faulty", components) as job:
        _seed(job)
        old_view = version_seen(job, op.doc_id)
        fired = _inject(monkeypatch, getattr(job, part), method, when, op.doc_id)
        outcome = None
        try:
            outcome = op.run(job)
        except Fault:
            pass
        assert fired, f"the fault at {when} {part}.{method} never fired"
        if op.name != "delete":  # the job reports the failed document, it does not raise
            assert outcome is not None and outcome.failed, "a failed write must be reported"
        monkeypatch.undo()

        view = version_seen(job, op.doc_id)
        new_hash = op.new.hash if op.new else None
        old_hash = op.old.hash if op.old else None
        committed = step > COMMIT or (step == COMMIT and when == "after")
        if not committed:
            assert view == old_view == (old_hash, old_hash), "before the commit point the old version stands"
        elif (part, method, when) == ("chunk_index", "replace_document", "before") or (
                (part, method, when) == ("chunk_index", "delete_document", "before")):
            # past the commit point with the chunk swap not done: graph new, index old until recovery
            assert view == (new_hash, old_hash)
            assert [e.doc_id for e in job.journal.pending()] == [op.doc_id]
        else:
            assert view == (new_hash, new_hash), "a write settled past its commit point is complete"

        op.run(job)  # the re-run: recovery first, then the operation again
        assert version_seen(job, op.doc_id) == (new_hash, new_hash)
        assert job.journal.pending() == []
        assert kb_digest(job) == expected


@pytest.mark.parametrize(("op_name", "step", "part", "method", "when"), _cases())
def test_embedded_fault_then_rerun_equals_clean_run(op_name, step, part, method, when, tmp_path, components,
                                                     monkeypatch):
    _check_fault_then_rerun("embedded", op_name, step, part, method, when, tmp_path, components, monkeypatch)


@pytest.mark.neo4j
@pytest.mark.parametrize(("op_name", "step", "part", "method", "when"), _cases())
def test_neo4j_adapter_fault_then_rerun_equals_clean_run(op_name, step, part, method, when, tmp_path, components,
                                                         monkeypatch):
    _check_fault_then_rerun("neo4j", op_name, step, part, method, when, tmp_path, components, monkeypatch)


# -- over HTTP --------------------------------------------------------------------------------
KEY = "crash-key"


@pytest.fixture
def api(components):
    from kgrag.server.app import create_app

    settings = components.settings.model_copy(
        update={"server": components.settings.server.model_copy(update={"api_key": KEY})})
    app = create_app(settings, components, warm=False)
    client = app.test_client()
    resp = client.post("/v1/documents", headers={"X-API-Key": KEY}, json={"documents": [
        {"id": d.id, "title": d.title, "text": d.text} for d in (HARBOR_V1, KUUSIK)]})
    assert resp.status_code == 201, resp.get_data(as_text=True)
    return client


def _texts(components, doc_id: str) -> list[str]:
    ids = sorted(components.chunk_index.chunk_ids_by_document().get(doc_id, set()))
    return [c.text for c in components.chunk_index.get(ids) if not c.is_parent]


@pytest.mark.parametrize(("part", "method"), [("graph", "write_document"), ("chunk_index", "replace_document")])
def test_http_update_whose_write_fails_is_503(api, components, monkeypatch, part, method):
    job_store = getattr(components, part)
    _inject(monkeypatch, job_store, method, "before", "harbor")
    old_texts = _texts(components, "harbor")
    resp = api.post("/v1/documents", headers={"X-API-Key": KEY},
                    json={"documents": [{"id": "harbor", "title": HARBOR_V2.title, "text": HARBOR_V2.text}]})
    assert resp.status_code == 503, resp.get_data(as_text=True)
    body = resp.get_json()
    assert body["error"]["code"] == "store_unavailable" and body["error"]["request_id"]
    assert [f["path"] for f in body["failed"]] == ["harbor"]
    monkeypatch.undo()
    if part == "graph":  # before the commit point: the old version, in both stores
        assert content_of(components.graph.get_document("harbor").hash) == HARBOR_V1.hash
        assert _texts(components, "harbor") == old_texts
    else:  # past it: the graph has the new version; the journal finishes the chunks
        assert content_of(components.graph.get_document("harbor").hash) == HARBOR_V2.hash
        assert _texts(components, "harbor") == old_texts
        assert [e.doc_id for e in components.journal.pending()] == ["harbor"]
    # the same request again converges on the new version
    resp = api.post("/v1/documents", headers={"X-API-Key": KEY},
                    json={"documents": [{"id": "harbor", "title": HARBOR_V2.title, "text": HARBOR_V2.text}]})
    assert resp.status_code in (200, 201)
    assert " ".join(_texts(components, "harbor")).split() == HARBOR_V2.text.split()
    assert components.journal.pending() == []


def test_http_delete_whose_graph_half_fails_is_503_and_keeps_the_document(api, components, monkeypatch):
    _inject(monkeypatch, components.graph, "delete_document", "before", "kuusik")
    texts = _texts(components, "kuusik")
    resp = api.delete("/v1/documents/kuusik", headers={"X-API-Key": KEY})
    assert resp.status_code == 503 and resp.get_json()["error"]["code"] == "store_unavailable"
    monkeypatch.undo()
    listed = [d["id"] for d in api.get("/v1/documents", headers={"X-API-Key": KEY}).get_json()["documents"]]
    assert "kuusik" in listed and _texts(components, "kuusik") == texts and texts
    assert api.delete("/v1/documents/kuusik", headers={"X-API-Key": KEY}).status_code == 200
    assert _texts(components, "kuusik") == [] and components.graph.get_document("kuusik") is None
