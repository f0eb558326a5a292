"""Admin: add (JSON texts or file uploads), list and delete documents. One ingest at a time."""

from __future__ import annotations

import os
import re
import shutil
import threading
import unicodedata
import uuid
from pathlib import Path

from flask import Blueprint, current_app, jsonify, request

from kgrag.ingest.loaders import SUPPORTED_SUFFIXES, LoadError
from kgrag.ingest.sources import Sources, posted_document, upload_documents
from kgrag.server.auth import require_admin
from kgrag.server.errors import ApiError, redact_paths
from kgrag.server.request_log import request_id
from kgrag.server.schemas import DocumentsRequest, json_body
from kgrag.types import Document

bp = Blueprint("documents", __name__)
INGEST_LOCK = threading.Lock()
MAX_NAME_BYTES = 200


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
    uploads = _Uploads.start() if request.files else None
    try:
        if uploads is not None:
            docs, failed = uploads.load_all(request.files.getlist("file") + request.files.getlist("files"))
        else:
            req = DocumentsRequest.model_validate(json_body())
            posted: dict[str, dict] = {}
            for d in req.documents:  # the first of one id is ingested, a second is refused
                posted.setdefault(d.id, d.model_dump())
            docs = [posted_document(d.model_dump()) for d in req.documents]
            failed = []
        if not docs and failed:
            raise ApiError(400, "no_documents", "; ".join(f"{f['path']}: {f['reason']}" for f in failed))
        with INGEST_LOCK:
            report = _components().ingest_job().run_documents(docs)
            _components().retriever.linker.invalidate()
            _components().retriever.facets.invalidate()  # new doc types, tags or dates
            if uploads is not None:  # under the lock: two uploads of one name keep the later file
                uploads.keep({f.path for f in report.failed})
            else:  # kept as sources, so a rebuild of a lost store brings them back (kgrag.repair)
                failed_sources = {f.path for f in report.failed}
                sources = Sources(current_app.config["KGRAG_SETTINGS"].data_dir)
                for fields in posted.values():
                    if (fields.get("source") or fields["id"]) not in failed_sources:
                        sources.keep_posted(fields)
    finally:
        if uploads is not None:
            uploads.discard()
    body = report.to_dict()
    body["failed"] = failed + [{**f, "reason": redact_paths(f["reason"])} for f in body.get("failed", [])]
    not_written = [f for f in report.failed if f.stage == "write"]
    if not_written:
        # A store failed: the request did not do what it asked. Documents that failed before the
        # commit point keep their old version (see kgrag.stores.consistency); the body still
        # lists what was written.
        message = "; ".join(f"{f.path}: {redact_paths(f.reason)}" for f in not_written)
        return jsonify({"error": {"code": "store_unavailable", "message": message, "request_id": request_id()},
                        **body}), 503
    status = 201 if (report.new or report.changed) else 200
    return jsonify(body), status


@bp.delete("/v1/documents/<path:doc_id>")
@require_admin
def delete_document(doc_id: str):
    with INGEST_LOCK:
        try:  # a store failure raises (503); the write protocol keeps the document whole
            removed = _components().ingest_job().delete(doc_id)
        finally:
            _components().retriever.linker.invalidate()
            _components().retriever.facets.invalidate()  # new doc types, tags or dates
    if not removed:
        raise ApiError(404, "not_found", f"no document with id {doc_id!r}")
    return jsonify({"deleted": doc_id})


def upload_name(given: str) -> str | None:
    """The name an upload is stored and known by: the client's file name in any script (NFC),
    its last path component only (``../x.md``, ``team a/notes.md`` and ``C:\\docs\\x.md`` keep
    ``x.md`` / ``notes.md``), without control or format characters or leading dots. None when
    nothing usable is left. (werkzeug's ``secure_filename`` keeps ASCII only: ``中文.md``
    became ``md`` and was refused as "unsupported file type ''".)"""
    name = unicodedata.normalize("NFC", given).replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C").strip().lstrip(".").strip()
    if len(name.encode()) > MAX_NAME_BYTES:  # file systems allow 255 bytes; keep the suffix
        suffix = Path(name).suffix[:16]
        name = name.encode()[: MAX_NAME_BYTES - len(suffix.encode())].decode(errors="ignore") + suffix
    return name if Path(name).stem else None


def client_filename(storage) -> str:
    """The file name as the client sent it. werkzeug reads a backslash in the quoted name as an
    escape (``C:\\docs\\x.md`` became ``C:docsx.md``), but browsers send it as is (the HTML
    standard escapes only quotes, as ``%22``): the name is read again from the part's own
    header, so ``upload_name`` keeps its last component."""
    disposition = storage.headers.get("Content-Disposition", "")
    if "filename*" not in disposition:
        found = re.search(r'filename="([^"]*)"', disposition)
        if found is not None and "\\" in found.group(1) and not found.group(1).endswith("\\"):
            return found.group(1)
    return storage.filename or ""


class _Uploads:
    """One request's uploads, staged under ``uploads/.incoming/<random>/<name>`` (loaders see
    the real file name) and moved into ``uploads/<name>`` only once ingested: a file that fails
    to load or ingest never replaces the knowledge base's copy, and leaves nothing behind.
    A file's document id is ``uploads/<name>`` (``kgrag.ingest.sources.upload_documents``);
    two files of one request with the same name
    are refused, not silently merged (uploading the same name again later is an update)."""

    def __init__(self, folder: Path, staging: Path) -> None:
        self.folder, self.staging = folder, staging
        self.names: list[str] = []

    @classmethod
    def start(cls) -> _Uploads:
        folder = Path(current_app.config["KGRAG_SETTINGS"].data_dir) / "uploads"
        staging = folder / ".incoming" / uuid.uuid4().hex
        staging.mkdir(parents=True)
        return cls(folder, staging)

    def load_all(self, files) -> tuple[list[Document], list[dict]]:
        docs: list[Document] = []
        failed: list[dict] = []
        for storage in files:
            name = upload_name(client_filename(storage))
            if name is None:
                failed.append({"path": storage.filename or "", "reason": "file name missing or unusable"})
            elif Path(name).suffix.lower() not in SUPPORTED_SUFFIXES:
                failed.append({"path": name, "reason": f"unsupported file type {Path(name).suffix!r}"})
            elif name in self.names:
                failed.append({"path": storage.filename, "reason": f"another file of this upload is also stored "
                                                                   f"as {name!r}: rename one"})
            else:
                docs += self._load(storage, name, failed)
        if not docs and not failed:
            raise ApiError(400, "no_documents", "multipart upload has no 'file' parts")
        return docs, failed

    def _load(self, storage, name: str, failed: list[dict]) -> list[Document]:
        path = self.staging / name
        storage.save(path)
        self.names.append(name)
        try:
            return upload_documents(path, name)
        except LoadError as exc:
            failed.append({"path": name, "reason": redact_paths(exc.reason)})
            return []

    def keep(self, failed_sources: set[str]) -> None:
        """Move the uploads whose documents were all ingested into place."""
        for name in self.names:
            if f"uploads/{name}" not in failed_sources and (self.staging / name).exists():
                os.replace(self.staging / name, self.folder / name)

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


def remove_staged_uploads(data_dir: Path) -> int:
    """At start: the staging folders uploads of a killed server left (``uploads/.incoming/*``);
    no request is running yet. Returns how many were removed."""
    staging = Path(data_dir) / "uploads" / ".incoming"
    if not staging.is_dir():
        return 0
    left = [p for p in staging.iterdir()]
    for path in left:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return len(left)
