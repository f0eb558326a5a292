"""The OpenAPI 3.1 document, generated from the request, query-parameter and response models
(``schemas.py``, ``params.py``, ``responses.py``, the route modules' own request models) and
the app's URL map; served at ``/openapi.json`` with Swagger UI at ``/docs`` (its files come
from the installed ``flask-swagger-ui`` package, never a CDN).

``OPERATIONS`` says, per route, which models describe it; paths, path parameters, schemas,
security and error responses are derived. ``undocumented_routes(app)`` lists URL rules with
no entry (a test keeps it empty), so a new route cannot silently miss the document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from flask import Blueprint, Flask, current_app, jsonify
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from kgrag.aliases.service import MAX_NAME_CHARS, NAME_PATTERN
from kgrag.server import params as p
from kgrag.server import responses as r
from kgrag.server.routes.aliases import AddAliases, Merge, RemoveAliases, Rename, Split
from kgrag.server.routes.feedback import FeedbackRequest, FeedbackStored
from kgrag.server.routes.reranker import TrainRequest
from kgrag.server.schemas import DocumentsRequest, QueryRequest, RetrieveRequest

DOCS_URL = "/docs"
SPEC_URL = "/openapi.json"
REF = "#/components/schemas/{model}"
# Routes that serve files rather than API calls: Flask's static files and Swagger UI's own.
NOT_API = ("static", "swagger_ui.show")

_ERRORS = {
    400: "malformed JSON, or a field / parameter that is not valid (the message names it)",
    401: "admin route: API key missing or wrong",
    403: "admin route: admin is disabled (no API key configured)",
    404: "no such document, entity or route",
    405: "method not allowed on this route",
    409: "the change conflicts with the graph (ambiguous name, curated alias, store refusal)",
    413: "request body larger than the configured limit",
    414: "the request line is longer than the server reads",
    415: "body is not of a supported content type",
    429: "too many requests: from this client (feedback), or admin work already queued; see Retry-After",
    431: "the request headers are larger than the server reads",
    500: "the server failed (the message names the request id; details are in its log)",
    503: "a store failed (a broken, missing or unreachable database); details are in the log",
}


@dataclass(frozen=True)
class Operation:
    method: str
    rule: str  # the Flask rule, e.g. "/v1/entities/<path:key>"
    summary: str
    tag: str
    ok: type[BaseModel] | None = None  # JSON body of the success response
    ok_status: int = 200
    # non-JSON success: media type -> a description of the body, or its schema
    ok_media: dict[str, str | dict[str, Any]] = field(default_factory=dict)
    body: type[BaseModel] | None = None  # JSON request body
    body_media: tuple[str, ...] = ()  # other request media types accepted (multipart, CSV)
    query: type[BaseModel] | None = None
    admin: bool = False
    errors: tuple[int, ...] = ()
    extra_ok: tuple[int, ...] = ()  # other success statuses with the same body (e.g. 200 "unchanged")
    names_new: bool = False  # its path's entity name may create an entity: it must be a valid name


# One server-sent event of a streamed answer, as event-stream schemas describe an event.
SSE_EVENT = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {"enum": ["retrieval", "token", "answer"]},
        "data": {"type": "string", "contentMediaType": "application/json",
                 "description": "retrieval: {hits, trace, trace_id} (as /v1/retrieve); token: {type, text}; "
                                "answer: {type, answer} (the checked answer, as /v1/query without hits/trace)"},
    },
    "description": "with \"stream\": true: one `retrieval` event, `token` events, then one `answer` event",
}
_BODY_ERRORS = (400, 413, 415)
# A multipart body: one or more parts named "file", each a file.
_MULTIPART = {"type": "object", "required": ["file"], "additionalProperties": False,
              "properties": {"file": {"type": "string", "format": "binary"}}}
_ADMIN_ERRORS = (401, 403)

OPERATIONS: tuple[Operation, ...] = (
    Operation("post", "/v1/query", "Ask a question: a cited answer (JSON, or server-sent events with stream=true)",
              "query", r.QueryResponse, body=QueryRequest, errors=_BODY_ERRORS,
              ok_media={"text/event-stream": SSE_EVENT}),
    Operation("post", "/v1/retrieve", "Ranked chunks with the trace of how each was found", "query",
              r.RetrieveResponse, body=RetrieveRequest, errors=_BODY_ERRORS),
    Operation("post", "/v1/feedback", "Rate an answer (helpful / wrong / missing source)", "feedback",
              FeedbackStored, ok_status=201, body=FeedbackRequest, errors=(*_BODY_ERRORS, 404, 429)),
    Operation("get", "/v1/entities", "Find entities by any name or alias", "graph", r.EntitySearchResponse,
              query=p.EntitySearchParams, errors=(400,)),
    Operation("get", "/v1/entities/<path:key>", "One entity: aliases, neighbours (1-2 hops), mentioning chunks",
              "graph", r.EntityDetail, query=p.EntityParams, errors=(400, 404)),
    Operation("get", "/v1/relations", "The relations between two entities and the chunks that evidence them",
              "graph", r.RelationDetail, query=p.RelationParams, errors=(400, 404)),
    Operation("get", "/v1/documents", "List the documents (admin)", "documents", r.DocumentList, admin=True),
    Operation("post", "/v1/documents", "Add documents: JSON texts or multipart file uploads (admin)", "documents",
              r.IngestResponse, ok_status=201, extra_ok=(200,), body=DocumentsRequest,
              body_media=("multipart/form-data",), admin=True, errors=_BODY_ERRORS),
    Operation("delete", "/v1/documents/<path:doc_id>", "Delete a document with its chunks and graph (admin)",
              "documents", r.Deleted, admin=True, errors=(404,)),
    Operation("get", "/v1/entities/_aliases", "List entities and their aliases (admin)", "aliases", r.AliasListing,
              query=p.AliasListParams, admin=True, errors=(400, 404, 409)),
    Operation("get", "/v1/entities/_show", "One entity as the alias admin sees it (admin)", "aliases", r.AliasShow,
              query=p.ShowParams, admin=True, errors=(400, 404, 409)),
    Operation("get", "/v1/entities/_suggest", "Candidate duplicate entities, never applied (admin)", "aliases",
              r.Suggestions, query=p.SuggestParams, admin=True, errors=(400,)),
    Operation("get", "/v1/entities/_audit", "Who changed which aliases when (admin)", "aliases", r.AuditLog,
              query=p.AuditParams, admin=True, errors=(400,)),
    Operation("get", "/v1/entities/_export", "The glossary as CSV (admin)", "aliases",
              ok_media={"text/csv": "canonical,type,aliases"}, query=p.ExportParams, admin=True, errors=(400,)),
    Operation("post", "/v1/entities/<path:name>/aliases", "Add aliases to an entity (admin)", "aliases",
              r.AliasChange, ok_status=201, extra_ok=(200,), body=AddAliases, admin=True,
              errors=(*_BODY_ERRORS, 404, 409), names_new=True),
    Operation("delete", "/v1/entities/<path:name>/aliases", "Remove aliases from an entity (admin)", "aliases",
              r.AliasChange, body=RemoveAliases, query=p.RemoveAliasParams, admin=True,
              errors=(*_BODY_ERRORS, 404, 409)),
    Operation("post", "/v1/entities/<path:name>/rename", "Rename an entity; the old name stays an alias (admin)",
              "aliases", r.AliasChange, body=Rename, admin=True, errors=(*_BODY_ERRORS, 404, 409)),
    Operation("post", "/v1/entities/<path:name>/split", "Split aliases off into a new entity (admin)", "aliases",
              r.AliasChange, ok_status=201, extra_ok=(200,), body=Split, admin=True,
              errors=(*_BODY_ERRORS, 404, 409)),
    Operation("delete", "/v1/entities/<path:key>", "Delete an entity (admin)", "aliases", r.AliasChange,
              admin=True, errors=(404, 409)),
    Operation("post", "/v1/entities/_merge", "Merge entities into one (admin)", "aliases", r.AliasChange,
              body=Merge, admin=True, errors=(*_BODY_ERRORS, 404, 409)),
    Operation("post", "/v1/entities/_import", "Import a glossary: CSV body or a multipart file (admin)", "aliases",
              r.AliasChange, ok_status=201, extra_ok=(200,), query=p.ImportParams,
              body_media=("text/csv", "multipart/form-data"), admin=True, errors=(*_BODY_ERRORS, 404, 409)),
    Operation("post", "/v1/reranker/train", "Train the reranker on this knowledge base in the background (admin)",
              "reranker", r.TrainingStarted, ok_status=202, body=TrainRequest, admin=True,
              errors=(*_BODY_ERRORS, 409)),
    Operation("get", "/v1/jobs/<job_id>", "How far a long admin request (an import, a training) has got (admin)",
              "aliases",
              r.JobStatus, admin=True, errors=(404,)),
    Operation("get", "/healthz", "Liveness", "service", r.Health),
    Operation("get", "/readyz", "Readiness: stores answer and models are loaded (503 until then)", "service",
              r.Readiness, extra_ok=(503,)),
    Operation("get", "/metrics", "Prometheus metrics (process, requests, stage latency, abstentions)", "service",
              ok_media={"text/plain": "Prometheus text exposition format"}),
    Operation("get", "/", "The web page", "service", ok_media={"text/html": "the page"}),
    Operation("get", "/favicon.ico", "The page's icon", "service", ok_media={"image/svg+xml": "the icon"}),
    Operation("get", SPEC_URL, "This document", "service", ok_media={"application/json": "OpenAPI 3.1"}),
)

_CONVERTER = re.compile(r"<(?:[a-z]+:)?(\w+)>")


def openapi_path(rule: str) -> str:
    return _CONVERTER.sub(r"{\1}", rule)


def _models() -> list[type[BaseModel]]:
    out: list[type[BaseModel]] = [r.ErrorBody]
    for op in OPERATIONS:
        out += [m for m in (op.ok, op.body) if m is not None]
    return list(dict.fromkeys(out))


def _schemas() -> tuple[dict[Any, dict[str, Any]], dict[str, Any]]:
    keyed: list[tuple[type[BaseModel], Literal["validation"]]] = [(m, "validation") for m in _models()]
    refs, top = models_json_schema(keyed, ref_template=REF)
    return refs, top.get("$defs", {})


def _parameters(op: Operation) -> list[dict[str, Any]]:
    out = [{"name": name, "in": "path", "required": True, "schema": _path_schema(op, name)}
           for name in _CONVERTER.findall(op.rule)]
    if op.query is not None:
        schema = op.query.model_json_schema(ref_template=REF)
        required = set(schema.get("required", []))
        for name, prop in schema["properties"].items():
            param: dict[str, Any] = {"name": name, "in": "query", "required": name in required, "schema": prop}
            if prop.get("description"):
                param["description"] = prop["description"]
            if "array" in _types(prop):
                param.update(style="form", explode=True)
            out.append(param)
    return out


def _path_schema(op: Operation, name: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "minLength": 1}
    if op.names_new and name == "name":
        schema.update(maxLength=MAX_NAME_CHARS, pattern=NAME_PATTERN,
                      description="a key, name or alias of an entity, or the canonical name of a new one")
    return schema


def _types(prop: dict[str, Any]) -> set[str]:
    found = {prop["type"]} if "type" in prop else set()
    for option in prop.get("anyOf", []):
        found |= _types(option)
    return found


def _operation(op: Operation, refs: dict) -> dict[str, Any]:
    spec: dict[str, Any] = {"summary": op.summary, "tags": [op.tag],
                            "operationId": f"{op.method}_{re.sub(r'[^a-z0-9]+', '_', op.rule.lower()).strip('_') or 'index'}"}
    parameters = _parameters(op)
    if parameters:
        spec["parameters"] = parameters
    if op.body is not None or op.body_media:
        content: dict[str, Any] = {}
        if op.body is not None:
            content["application/json"] = {"schema": refs[(op.body, "validation")]}
        for media in op.body_media:
            content[media] = {"schema": _MULTIPART if media.startswith("multipart/") else {"type": "string"}}
        spec["requestBody"] = {"required": op.method != "delete", "content": content}
    spec["responses"] = _responses(op, refs)
    if op.admin:
        spec["security"] = [{"ApiKey": []}, {"Bearer": []}]
    return spec


def _responses(op: Operation, refs: dict) -> dict[str, Any]:
    ok_content: dict[str, Any] = {}
    if op.ok is not None:
        ok_content["application/json"] = {"schema": refs[(op.ok, "validation")]}
    for media, described in op.ok_media.items():
        kind = "object" if media == "application/json" else "string"
        schema = described if isinstance(described, dict) else {"type": kind, "description": described}
        ok_content[media] = {"schema": schema}
    out: dict[str, Any] = {}
    for status in (op.ok_status, *op.extra_ok):
        out[str(status)] = {"description": "success" if status < 400 else "not ready", "content": ok_content}
    error = {"application/json": {"schema": refs[(r.ErrorBody, "validation")]}}
    # Any route: a request line or headers the front refuses (414, 431), a method the route
    # lacks, a failure; a full lane (503; an admin change: 429, kgrag.server.front).
    codes = set(op.errors) | {405, 414, 431, 500, 503} | (set(_ADMIN_ERRORS) if op.admin else set())
    if op.admin and op.method != "get":
        codes.add(429)
    for status in sorted(codes):
        out.setdefault(str(status), {"description": _ERRORS[status], "content": error})
    return out


def _this_server(schemas: dict[str, Any], settings: Any) -> None:
    """Options this server's configuration refuses (``kgrag.request_options``) are documented as
    refused: without a cross-encoder, ``rerank`` may only be false or left out."""
    if settings is None or settings.retrieval.reranker_path:
        return
    for name in ("RetrieveRequest", "QueryRequest"):
        prop = schemas.get(name, {}).get("properties", {}).get("rerank")
        if prop is not None:
            prop["enum"] = [False]
            prop.pop("default", None)  # "rerank when configured": nothing here
            prop["description"] = ("this server has no cross-encoder (retrieval.reranker_path): true is refused "
                                   "(400 option_unavailable)")


def build_openapi(app: Flask) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``app``'s API (as this server's configuration accepts it)."""
    refs, schemas = _schemas()
    _this_server(schemas, app.config.get("KGRAG_SETTINGS"))
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(openapi_path(op.rule), {})[op.method] = _operation(op, refs)
    return {
        "openapi": "3.1.0",
        "info": {"title": "kgrag", "version": _version(),
                 "description": "Knowledge-graph-augmented RAG: cited answers over your documents, the retrieval "
                                "trace, the entity graph, and alias administration. Every error is JSON "
                                "`{\"error\": {\"code\", \"message\", \"request_id\"}}`; every response echoes `X-Request-Id`."},
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                "Bearer": {"type": "http", "scheme": "bearer"},
            },
        },
    }


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kgrag")
    except PackageNotFoundError:
        return "0"


def undocumented_routes(app: Flask) -> list[str]:
    """``METHOD rule`` of every API route with no entry in ``OPERATIONS``."""
    known = {(op.method.upper(), op.rule) for op in OPERATIONS}
    out = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint in NOT_API:
            continue
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            if (method, rule.rule) not in known:
                out.append(f"{method} {rule.rule}")
    return out


def install(app: Flask) -> None:
    """``/openapi.json`` (built once, on first request) and Swagger UI at ``/docs``."""
    from flask_swagger_ui import get_swaggerui_blueprint

    spec_bp = Blueprint("openapi", __name__)

    @spec_bp.get(SPEC_URL)
    def openapi_json():
        cached = current_app.config.get("KGRAG_OPENAPI")
        if cached is None:
            cached = current_app.config["KGRAG_OPENAPI"] = build_openapi(current_app)
        return jsonify(cached)

    app.register_blueprint(spec_bp)
    app.register_blueprint(get_swaggerui_blueprint(DOCS_URL, SPEC_URL, config={"app_name": "kgrag API"}))
