"""POST /v1/retrieve and POST /v1/query (JSON, or server-sent events with "stream": true), through
the asking seam (``kgrag.asking``) that ``kgrag query`` and ``kgrag eval`` use too.

Every answer carries ``trace_id``: the request id (``X-Request-Id``) under which the request
log holds its line; feedback on the answer names it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, stream_with_context

from kgrag.asking import Asking
from kgrag.retrieve.pipeline import RetrievalError
from kgrag.retrieve.types import RetrievalResult
from kgrag.server.errors import ApiError
from kgrag.server.request_log import note, request_id
from kgrag.server.schemas import QueryRequest, RetrieveRequest, json_body

bp = Blueprint("query", __name__)


def _asking() -> Asking:
    return current_app.config["KGRAG_ASKING"]


def _observed(result: RetrievalResult) -> None:
    current_app.config["KGRAG_METRICS"].observe_stages(result.timings_ms)
    note(stages_ms=result.timings_ms, linked_entities=len(result.query.linked), hits=len(result.hits))


@bp.post("/v1/retrieve")
def retrieve():
    req = RetrieveRequest.model_validate(json_body())
    try:
        asked = _asking().retrieve_only(req.checked_ask(current_app.config["KGRAG_SETTINGS"]))
    except RetrievalError as exc:
        raise ApiError(400, "invalid_request", str(exc)) from exc
    _observed(asked.result)
    asked.body["trace_id"] = request_id()
    return jsonify(asked.body)


@bp.post("/v1/query")
def query():
    req = QueryRequest.model_validate(json_body())
    metrics = current_app.config["KGRAG_METRICS"]
    try:
        if req.stream:
            streamed = _asking().stream(req.checked_ask(current_app.config["KGRAG_SETTINGS"]))
        else:
            asked = _asking().ask(req.checked_ask(current_app.config["KGRAG_SETTINGS"]))
    except RetrievalError as exc:
        raise ApiError(400, "invalid_request", str(exc)) from exc
    if req.stream:
        _observed(streamed.result)
        return _sse(streamed.events, metrics)
    _observed(asked.result)
    answer = asked.answer
    assert answer is not None  # ask() always answers
    _outcome(metrics, answer.abstained, answer.mode, answer.timings_ms)
    asked.body["trace_id"] = request_id()
    return jsonify(asked.body)


def _outcome(metrics, abstained: bool, mode: str, timings_ms: dict) -> None:
    if abstained:
        metrics.abstentions.inc()
    note(abstained=abstained, answer_mode=mode, generation_ms=timings_ms)


def _sse(events: Iterator[tuple[str, dict[str, Any]]], metrics) -> Response:
    trace_id = request_id()

    def stream():
        for name, data in events:
            if name == "retrieval":
                data["trace_id"] = trace_id
            elif name == "answer":
                answer = data["answer"]
                _outcome(metrics, bool(answer.get("abstained")), answer.get("mode", ""), answer.get("timings_ms", {}))
                answer["trace_id"] = trace_id
            yield _event(name, data)

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return Response(stream_with_context(stream()), mimetype="text/event-stream", headers=headers)


def _event(name: str, data) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
