"""Admin routes for alias management (API key required), the HTTP face of ``kgrag aliases``.

Collection routes start with ``_`` (``/v1/entities/_aliases``, ``_merge``, ``_import``,
``_export``, ``_suggest``, ``_audit``, ``_show``): an entity key is a normalized name and never
starts with ``_``, so these never shadow ``GET /v1/entities/<key>``. Per-entity changes hang
below the entity (``POST|DELETE /v1/entities/<name>/aliases``, ``POST .../rename``,
``POST .../split``, ``DELETE /v1/entities/<name>``); ``<name>`` is a key, a canonical name or
an alias only that entity claims (as in the CLI).

Each change runs under the ingest lock (an ingest in this process must not interleave with
it), is audited as ``api-key:<fingerprint>`` (plus the ``X-Kgrag-User`` header when sent), and
drops the linker's cached alias list so fuzzy linking sees it with the next question.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Annotated

from flask import Blueprint, Response, current_app, jsonify, request
from pydantic import BaseModel, ConfigDict, Field

from kgrag.aliases.glossary_io import export_glossary, import_glossary
from kgrag.aliases.service import MAX_NAME_CHARS, NAME_PATTERN, AliasError, AliasService, Change
from kgrag.aliases.suggest import suggest_duplicates
from kgrag.aliases.views import ambiguous_aliases, list_entities, show
from kgrag.errors import StoreConflict
from kgrag.server.auth import require_admin
from kgrag.server.errors import ApiError
from kgrag.server.jobs import JOB_HEADER, VALID_ID, Job, finish, progress
from kgrag.server.params import (
    AliasListParams,
    AuditParams,
    ExportParams,
    ImportParams,
    RemoveAliasParams,
    ShowParams,
    SuggestParams,
    query_params,
)
from kgrag.server.routes.documents import INGEST_LOCK
from kgrag.server.schemas import json_body

bp = Blueprint("aliases", __name__)
_STATUS = {"unknown_entity": 404, "ambiguous": 409, "conflict": 409, "invalid": 400}
# A name as the service accepts it (``clean_name``): the document states the pattern, the
# service refuses what breaks it with its own words (which rule, which name).
_NAME_RULE = {"pattern": NAME_PATTERN,
              "description": "a letter or digit; no control character; none of ; ； |"}
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS, json_schema_extra=_NAME_RULE)]


class AddAliases(BaseModel):
    model_config = ConfigDict(extra="forbid")
    aliases: list[Name] = Field(min_length=1, max_length=500)
    force: bool = Field(False, strict=True)
    type: str | None = Field(None, max_length=64)


class RemoveAliases(BaseModel):
    model_config = ConfigDict(extra="forbid")
    aliases: list[Name] = Field(min_length=1, max_length=500)


class Rename(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name


class Split(BaseModel):
    model_config = ConfigDict(extra="forbid")
    aliases: list[Name] = Field(min_length=1, max_length=500)
    into: Name


class Merge(BaseModel):
    model_config = ConfigDict(extra="forbid")
    keep: Name
    drop: list[Name] = Field(min_length=1, max_length=100)


def _who() -> str:
    key = current_app.config["KGRAG_SETTINGS"].server.api_key or ""
    label = f"api-key:{hashlib.sha256(key.encode()).hexdigest()[:8]}"
    user = request.headers.get("X-Kgrag-User", "").strip()[:64]
    return f"{user} ({label})" if user else label


def _service() -> AliasService:
    components = current_app.config["KGRAG_COMPONENTS"]
    return AliasService.from_components(components, user=_who(),
                                        on_change=lambda: components.retriever.linker.invalidate())


def _run(operation):
    """Run a service call, turning its refusals into JSON errors."""
    try:
        return operation()
    except AliasError as exc:
        raise ApiError(_STATUS.get(exc.code, 400), exc.code, str(exc)) from None
    except StoreConflict as exc:  # a real conflict; any other StoreError is a 503 (errors.py)
        raise ApiError(409, "store_refused", str(exc)) from None


def _change(operation, created_status: int = 200):
    with INGEST_LOCK:
        change = _run(operation)
    return jsonify(change.to_dict()), (created_status if change.changed else 200)


# -- reads ---------------------------------------------------------------------------------
@bp.get("/v1/entities/_aliases")
@require_admin
def list_aliases():
    params = query_params(AliasListParams)
    service = _service()
    if params.ambiguous:
        return jsonify({"ambiguous": _run(lambda: ambiguous_aliases(service))})
    return jsonify(_run(lambda: list_entities(service, entity=params.entity, every=params.all,
                                              limit=params.limit, offset=params.offset)))


@bp.get("/v1/entities/_show")
@require_admin
def show_entity():
    params = query_params(ShowParams)
    service = _service()
    return jsonify(_run(lambda: show(service, params.name, neighbours=params.neighbours)))


@bp.get("/v1/entities/_suggest")
@require_admin
def suggest():
    params = query_params(SuggestParams)
    components = current_app.config["KGRAG_COMPONENTS"]
    embedder = components.embedder if params.embeddings else None
    found = suggest_duplicates(components.graph, embedder=embedder, limit=params.limit,
                               max_entities=params.max_entities)
    return jsonify({"suggestions": [s.to_dict() for s in found]})


@bp.get("/v1/entities/_audit")
@require_admin
def audit():
    entries = _service().audit(query_params(AuditParams).limit)
    return jsonify({"entries": [e.__dict__ for e in entries]})


@bp.get("/v1/entities/_export")
@require_admin
def export():
    every = query_params(ExportParams).all
    service = _service()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "glossary.csv"
        _run(lambda: export_glossary(service, path, every=every))
        body = path.read_text(encoding="utf-8")
    return Response(body, mimetype="text/csv", headers={"Content-Disposition": "attachment; filename=glossary.csv"})


# -- changes -------------------------------------------------------------------------------
@bp.post("/v1/entities/<path:name>/aliases")
@require_admin
def add_aliases(name: str):
    req = AddAliases.model_validate(json_body())
    service = _service()
    return _change(lambda: service.add(name, req.aliases, force=req.force, type=req.type), created_status=201)


@bp.delete("/v1/entities/<path:name>/aliases")
@require_admin
def remove_aliases(name: str):
    """The aliases to remove come as ``?alias=`` (repeated), in a JSON body, or both."""
    aliases = query_params(RemoveAliasParams).alias or []
    if request.content_length:
        aliases = [*aliases, *RemoveAliases.model_validate(json_body()).aliases]
    service = _service()
    if not aliases:  # nothing named: nothing to remove (the entity must still exist)
        entity = _run(lambda: service.resolve(name))
        return jsonify(Change("remove", entity.key, False, "no alias given: nothing removed").to_dict())
    return _change(lambda: service.remove(name, aliases))


@bp.post("/v1/entities/<path:name>/rename")
@require_admin
def rename(name: str):
    req = Rename.model_validate(json_body())
    service = _service()
    return _change(lambda: service.rename(name, req.name))


@bp.post("/v1/entities/<path:name>/split")
@require_admin
def split(name: str):
    req = Split.model_validate(json_body())
    service = _service()
    return _change(lambda: service.split(name, req.aliases, req.into), created_status=201)


@bp.delete("/v1/entities/<path:key>")  # the template of GET /v1/entities/<key>: one path, two methods
@require_admin
def delete(key: str):
    service = _service()
    return _change(lambda: service.delete(key))


@bp.post("/v1/entities/_merge")
@require_admin
def merge():
    req = Merge.model_validate(json_body())
    service = _service()
    return _change(lambda: service.merge(req.keep, req.drop))


@bp.post("/v1/entities/_import")
@require_admin
def import_csv():
    """A CSV glossary as the body (Content-Type text/csv) or as an uploaded file named ``file``
    (.csv, .yaml, .txt). ``?force=true`` lets aliases equal to curated names be shared."""
    force = query_params(ImportParams).force
    upload = request.files.get("file")
    if upload is not None:
        suffix = Path(upload.filename or "glossary.csv").suffix.lower() or ".csv"
        data, label = upload.read(), upload.filename or "upload"
    elif request.mimetype in ("text/csv", "text/plain"):
        suffix, data, label = ".csv", request.get_data(), "request body"
    else:
        raise ApiError(415, "unsupported_media_type", "send the glossary as text/csv or as a multipart file named 'file'")
    if suffix not in (".csv", ".yaml", ".yml", ".txt"):
        raise ApiError(400, "invalid_request", f"glossary file type {suffix!r} is not supported (.csv, .yaml, .txt)")
    job = _job("import")
    service = _service()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"glossary{suffix}"
            path.write_bytes(data)
            body, status = _change(lambda: import_glossary(service, path, force=force, label=label,
                                                           progress=progress(job)), created_status=201)
    except Exception as exc:
        finish(job, failed=True, message=str(exc) if isinstance(exc, ApiError) else type(exc).__name__)
        raise
    finish(job, failed=False, message=body.get_json()["message"])
    body.headers[JOB_HEADER] = job.id
    return body, status


def _job(kind: str) -> Job:
    """The job this request is (its id from ``X-Kgrag-Job`` when the client chose one)."""
    given = request.headers.get(JOB_HEADER, "").strip() or None
    if given is not None and not VALID_ID.match(given):
        raise ApiError(400, "invalid_request", f"{JOB_HEADER}: 1-128 characters of A-Z a-z 0-9 . _ : -")
    job = current_app.config["KGRAG_JOBS"].start(given, kind)
    if job is None:
        raise ApiError(409, "conflict", f"job {given!r} is still running")
    return job
