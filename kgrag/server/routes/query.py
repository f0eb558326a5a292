"""POST /v1/retrieve and POST /v1/query (JSON, or server-sent events with "stream": true).

Every answer carries ``trace_id``: the request id (``X-Request-Id``) under which the request
log holds its line; feedback on the answer names it."""

from __future__ import annotations

import json
import threading

from flask import Blueprint, Response, current_app, jsonify, stream_with_context

from kgrag.conversations import ConversationStore
from kgrag.retrieve.followup import remembered_chunks
from kgrag.retrieve.pipeline import RetrievalError
from kgrag.retrieve.trace import result_dict
from kgrag.server.errors import ApiError
from kgrag.server.request_log import note, request_id
from kgrag.server.schemas import QueryRequest, RetrieveRequest, json_body
from kgrag.types import Turn

bp = Blueprint("query", __name__)
_STORE_LOCK = threading.Lock()


def conversation_store() -> ConversationStore:
    """One store per app, opened on first use (in ``<data_dir>/conversations.sqlite``)."""
    with _STORE_LOCK:
        store = current_app.config.get("KGRAG_CONVERSATIONS")
        if store is None:
            store = ConversationStore.for_settings(current_app.config["KGRAG_SETTINGS"])
            current_app.config["KGRAG_CONVERSATIONS"] = store
        return store


def _history(req: RetrieveRequest) -> list[Turn]:
    if req.conversation_id is not None:
        return conversation_store().turns(req.conversation_id)
    return req.turns()


def _remember(req: RetrieveRequest, answer: str | None, cited: tuple[str, ...], body: dict | None = None) -> None:
    """Adds this turn to the named conversation (nothing without one), with the chunks it
    remembers (``remembered_chunks``): what "and the next one?" starts from."""
    if req.conversation_id is None:
        return
    conversation_store().append(req.conversation_id, req.kept_turn(answer, cited))
    if body is not None:
        body["conversation_id"] = req.conversation_id


def _driver(components, req: RetrieveRequest):
    """The iteration driver the request names (None: the server's). 'llm' on a server without
    an LLM plans LLM-free rounds, the trace saying why (a valid request is not refused)."""
    return None if req.iterate_driver is None else components.iteration_driver(req.iterate_driver)


def _retrieve(req: RetrieveRequest):
    components = current_app.config["KGRAG_COMPONENTS"]
    try:
        result = components.retriever.retrieve(
            req.question, top_k=req.top_k, filters=req.filters, modes=req.mode_tuple(), rerank=req.rerank,
            history=_history(req), iterate=req.iterate, recency=req.recency, rewrites=req.rewrite,
            driver=_driver(components, req),
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
    _remember(req, None, remembered_chunks([], _shown(body["hits"]), abstained=False), body)
    return jsonify(body)


@bp.post("/v1/query")
def query():
    req = QueryRequest.model_validate(json_body())
    result = _retrieve(req)
    generator = current_app.config["KGRAG_COMPONENTS"].generator
    metrics = current_app.config["KGRAG_METRICS"]
    if req.stream:
        return _sse(req, result, generator, metrics)
    answer = generator.answer_to(req.question, result)
    _outcome(metrics, answer.abstained, answer.mode, answer.timings_ms)
    body = answer.response(result)
    body["trace"]["generation"] = {
        "mode": answer.mode, "model": answer.model, "timings_ms": answer.timings_ms,
        "fallback_reason": answer.fallback_reason,
    }
    body["trace_id"] = request_id()
    cited = remembered_chunks([c.chunk_id for c in answer.citations], _shown(body["hits"]), answer.abstained)
    _remember(req, answer.text, cited, body)
    return jsonify(body)


def _shown(hits: list[dict]) -> list[str]:
    return [h["chunk_id"] for h in hits]


def _outcome(metrics, abstained: bool, mode: str, timings_ms: dict) -> None:
    if abstained:
        metrics.abstentions.inc()
    note(abstained=abstained, answer_mode=mode, generation_ms=timings_ms)


def _sse(req, result, generator, metrics) -> Response:
    trace_id = request_id()

    def events():
        retrieval = result_dict(result)
        retrieval["trace_id"] = trace_id
        yield _event("retrieval", retrieval)
        for event in generator.stream_to(req.question, result):
            if event.get("type") == "answer":
                answer = event["answer"]
                _outcome(metrics, bool(answer.get("abstained")), answer.get("mode", ""), answer.get("timings_ms", {}))
                answer["trace_id"] = trace_id
                cited = remembered_chunks([c["chunk_id"] for c in answer.get("citations") or []],
                                          _shown(retrieval["hits"]), bool(answer.get("abstained")))
                _remember(req, answer.get("text") or answer.get("answer"), cited, answer)
            yield _event(event.get("type", "message"), event)

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return Response(stream_with_context(events()), mimetype="text/event-stream", headers=headers)


def _event(name: str, data) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
