"""POST /v1/retrieve and POST /v1/query (JSON, or server-sent events with "stream": true)."""

from __future__ import annotations

import json

from flask import Blueprint, Response, current_app, jsonify, stream_with_context

from kgrag.retrieve.pipeline import RetrievalError
from kgrag.retrieve.trace import result_dict
from kgrag.server.errors import ApiError
from kgrag.server.schemas import QueryRequest, RetrieveRequest, json_body

bp = Blueprint("query", __name__)


def _retrieve(req: RetrieveRequest):
    components = current_app.config["KGRAG_COMPONENTS"]
    try:
        result = components.retriever.retrieve(
            req.question, top_k=req.top_k, filters=req.filters, modes=req.mode_tuple(), rerank=req.rerank
        )
    except RetrievalError as exc:
        raise ApiError(400, "invalid_request", str(exc)) from exc
    current_app.config["KGRAG_METRICS"].observe_stages(result.timings_ms)
    return result


@bp.post("/v1/retrieve")
def retrieve():
    req = RetrieveRequest.model_validate(json_body())
    return jsonify(result_dict(_retrieve(req)))


@bp.post("/v1/query")
def query():
    req = QueryRequest.model_validate(json_body())
    result = _retrieve(req)
    generator = current_app.config["KGRAG_COMPONENTS"].generator
    metrics = current_app.config["KGRAG_METRICS"]
    if req.stream:
        return _sse(req.question, result, generator, metrics)
    answer = generator.answer(req.question, result.hits, abstain=result.below_threshold,
                              expansions=result.query.expansions)
    if answer.abstained:
        metrics.abstentions.inc()
    body = answer.response(result)
    body["trace"]["generation"] = {
        "mode": answer.mode, "model": answer.model, "timings_ms": answer.timings_ms,
        "fallback_reason": answer.fallback_reason,
    }
    return jsonify(body)


def _sse(question, result, generator, metrics) -> Response:
    def events():
        yield _event("retrieval", result_dict(result))
        for event in generator.stream(question, result.hits, abstain=result.below_threshold,
                                      expansions=result.query.expansions):
            if event.get("type") == "answer" and event["answer"].get("abstained"):
                metrics.abstentions.inc()
            yield _event(event.get("type", "message"), event)

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return Response(stream_with_context(events()), mimetype="text/event-stream", headers=headers)


def _event(name: str, data) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
