"""POST /v1/retrieve and POST /v1/query (JSON, or server-sent events with "stream": true).

Every answer carries ``trace_id``: the request id (``X-Request-Id``) under which the request
log holds its line; feedback on the answer names it."""

from __future__ import annotations

import json

from flask import Blueprint, Response, current_app, jsonify, stream_with_context

from kgrag.retrieve.pipeline import RetrievalError
from kgrag.retrieve.trace import result_dict
from kgrag.server.errors import ApiError
from kgrag.server.request_log import note, request_id
from kgrag.server.schemas import QueryRequest, RetrieveRequest, json_body

bp = Blueprint("query", __name__)


def _retrieve(req: RetrieveRequest):
    components = current_app.config["KGRAG_COMPONENTS"]
    try:
        result = components.retriever.retrieve(
            req.question, top_k=req.top_k, filters=req.filters, modes=req.mode_tuple(), rerank=req.rerank,
            history=req.turns(),
        )
    except RetrievalError as exc:
        raise ApiError(400, "invalid_request", str(exc)) from exc
    current_app.config["KGRAG_METRICS"].observe_stages(result.timings_ms)
    note(stages_ms=result.timings_ms, linked_entities=len(result.query.linked), hits=len(result.hits))
    return result


@bp.post("/v1/retrieve")
def retrieve():
    req = RetrieveRequest.model_validate(json_body())
    body = result_dict(_retrieve(req))
    body["trace_id"] = request_id()
    return jsonify(body)


@bp.post("/v1/query")
def query():
    req = QueryRequest.model_validate(json_body())
    result = _retrieve(req)
    generator = current_app.config["KGRAG_COMPONENTS"].generator
    metrics = current_app.config["KGRAG_METRICS"]
    completion = result.query.completion
    question = completion.for_generation if completion is not None else req.question
    if req.stream:
        return _sse(question, result, generator, metrics)
    answer = generator.answer(question, result.hits, abstain=result.below_threshold,
                              expansions=result.query.expansions)
    _outcome(metrics, answer.abstained, answer.mode, answer.timings_ms)
    body = answer.response(result)
    body["trace"]["generation"] = {
        "mode": answer.mode, "model": answer.model, "timings_ms": answer.timings_ms,
        "fallback_reason": answer.fallback_reason,
    }
    body["trace_id"] = request_id()
    return jsonify(body)


def _outcome(metrics, abstained: bool, mode: str, timings_ms: dict) -> None:
    if abstained:
        metrics.abstentions.inc()
    note(abstained=abstained, answer_mode=mode, generation_ms=timings_ms)


def _sse(question, result, generator, metrics) -> Response:
    trace_id = request_id()

    def events():
        retrieval = result_dict(result)
        retrieval["trace_id"] = trace_id
        yield _event("retrieval", retrieval)
        for event in generator.stream(question, result.hits, abstain=result.below_threshold,
                                      expansions=result.query.expansions):
            if event.get("type") == "answer":
                answer = event["answer"]
                _outcome(metrics, bool(answer.get("abstained")), answer.get("mode", ""), answer.get("timings_ms", {}))
                answer["trace_id"] = trace_id
            yield _event(event.get("type", "message"), event)

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return Response(stream_with_context(events()), mimetype="text/event-stream", headers=headers)


def _event(name: str, data) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
