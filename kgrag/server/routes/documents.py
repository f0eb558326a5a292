"""Admin: add (JSON texts or file uploads), list and delete documents. One ingest at a time."""

from __future__ import annotations

import threading
from pathlib import Path

from flask import Blueprint, current_app, jsonify, request
from werkzeug.utils import secure_filename

from kgrag.ingest.loaders import SUPPORTED_SUFFIXES, LoadError, load
from kgrag.ingest.loaders.base import content_hash, document_id
from kgrag.server.auth import require_admin
from kgrag.server.errors import ApiError
from kgrag.server.schemas import DocumentsRequest, json_body
from kgrag.types import Document

bp = Blueprint("documents", __name__)
INGEST_LOCK = threading.Lock()


def _components():
    return current_app.config["KGRAG_COMPONENTS"]


@bp.get("/v1/documents")
@require_admin
def list_documents():
    docs = _components().graph.list_documents()
    return jsonify({
        "documents": [
            {"id": d.id, "source": d.source, "title": d.title, "hash": d.hash, "format": d.format}
            for d in docs
        ],
        "count": len(docs),
    })


@bp.post("/v1/documents")
@require_admin
def add_documents():
    if request.files:
        docs, failed = _uploaded_documents()
    else:
        req = DocumentsRequest.model_validate(json_body())
        docs = [
            Document(id=d.id, source=d.source or d.id, title=d.title, text=d.text,
                     hash=content_hash(d.title, d.text, d.format), format=d.format, metadata=d.metadata)
            for d in req.documents
        ]
        failed = []
    if not docs and failed:
        raise ApiError(400, "no_documents", "; ".join(f"{f['path']}: {f['reason']}" for f in failed))
    with INGEST_LOCK:
        report = _components().ingest_job().run_documents(docs)
        _components().retriever.linker.invalidate()
    body = report.to_dict()
    body["failed"] = failed + body.get("failed", [])
    status = 201 if (report.new or report.changed) else 200
    return jsonify(body), status


@bp.delete("/v1/documents/<path:doc_id>")
@require_admin
def delete_document(doc_id: str):
    with INGEST_LOCK:
        removed = _components().ingest_job().delete(doc_id)
        _components().retriever.linker.invalidate()
    if not removed:
        raise ApiError(404, "not_found", f"no document with id {doc_id!r}")
    return jsonify({"deleted": doc_id})


def _uploaded_documents() -> tuple[list[Document], list[dict]]:
    """Uploads are kept under <data_dir>/uploads (the knowledge base's own copy) and loaded by
    the same loaders as ``kgrag ingest``; a file's document id is ``uploads/<filename>``."""
    folder = Path(current_app.config["KGRAG_SETTINGS"].data_dir) / "uploads"
    folder.mkdir(parents=True, exist_ok=True)
    docs: list[Document] = []
    failed: list[dict] = []
    for storage in request.files.getlist("file") + request.files.getlist("files"):
        name = secure_filename(storage.filename or "")
        if not name:
            failed.append({"path": storage.filename or "", "reason": "file name missing or unusable"})
            continue
        if Path(name).suffix.lower() not in SUPPORTED_SUFFIXES:
            failed.append({"path": name, "reason": f"unsupported file type {Path(name).suffix!r}"})
            continue
        path = folder / name
        storage.save(path)
        try:
            loaded = load(path)
        except LoadError as exc:
            failed.append({"path": name, "reason": exc.reason})
            continue
        for doc in loaded:
            if doc.id == document_id(path):  # a whole-file document: name it by its upload
                doc.id = doc.source = f"uploads/{name}"
            docs.append(doc)
    if not docs and not failed:
        raise ApiError(400, "no_documents", "multipart upload has no 'file' parts")
    return docs, failed
