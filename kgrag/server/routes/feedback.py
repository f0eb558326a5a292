"""POST /v1/feedback: a rating of an answer (helpful / wrong / missing source), with an optional
comment and the chunks the person marked as right, stored beside the knowledge base
(``kgrag feedback list|export`` reads them back as an evaluation set)."""

from __future__ import annotations

import math
import threading

from flask import Blueprint, current_app, jsonify, request
from pydantic import BaseModel, ConfigDict, Field

from kgrag.feedback import ChunkRef, Feedback, FeedbackStore
from kgrag.feedback.export import gold_chunks
from kgrag.feedback.ratings import Rating
from kgrag.server.errors import ApiError, RateLimited
from kgrag.server.rate_limit import RateLimit
from kgrag.server.schemas import json_body

bp = Blueprint("feedback", __name__)
_STORE_LOCK = threading.Lock()
ChunkId = Field(min_length=1, max_length=1024)
# The largest valid request (every field at its longest) is about 50 KB.
MAX_BODY_BYTES = 64 * 1024


class CitedChunk(BaseModel):
    model_config = ConfigDict(extra="ignore")  # the page sends the citation as the API gave it
    n: int = Field(ge=1, le=1000)
    chunk_id: str = ChunkId


class FeedbackRequest(BaseModel):
    """A rating of one answer. ``relevant_chunks``: ids of the chunks the person marked as the
    right sources (gold when exported); ``trace_id``: the answer's ``trace_id``."""

    model_config = ConfigDict(extra="forbid")
    rating: Rating
    question: str = Field(min_length=1, max_length=4000)
    answer: str = Field("", max_length=20000)
    comment: str = Field("", max_length=2000)
    citations: list[CitedChunk] = Field(default_factory=list, max_length=100)
    relevant_chunks: list[str] = Field(default_factory=list, max_length=100)
    trace_id: str | None = Field(None, pattern=r"^[A-Za-z0-9._:-]{1,128}$")


class FeedbackStored(BaseModel):
    id: str
    created_at: str
    gold_ids: list[str] = Field(description="documents of the chunks taken as right (empty: none marked)")


def feedback_store() -> FeedbackStore:
    """One store per app, opened on first use (in ``<data_dir>/feedback.sqlite``)."""
    with _STORE_LOCK:
        store = current_app.config.get("KGRAG_FEEDBACK")
        if store is None:
            store = FeedbackStore(current_app.config["KGRAG_SETTINGS"].data_dir)
            current_app.config["KGRAG_FEEDBACK"] = store
        return store


def _doc_ids(chunk_ids: list[str]) -> dict[str, str]:
    """chunk id → its document; unknown chunk ids (e.g. a document re-ingested since the
    answer) are a 404 naming them."""
    wanted = list(dict.fromkeys(chunk_ids))
    if not wanted:
        return {}
    found = {c.id: c.doc_id for c in current_app.config["KGRAG_COMPONENTS"].chunk_index.get(wanted)}
    missing = [c for c in wanted if c not in found]
    if missing:
        raise ApiError(404, "not_found", f"unknown chunk id(s): {missing[:5]}")
    return found


def _limit() -> None:
    """A body at most ``MAX_BODY_BYTES`` (413), and at most ``server.feedback_per_minute`` posts
    per client (429 with Retry-After)."""
    if (request.content_length or 0) > MAX_BODY_BYTES:
        raise ApiError(413, "request_too_large", f"feedback is at most {MAX_BODY_BYTES} bytes")
    with _STORE_LOCK:
        limit = current_app.config.get("KGRAG_FEEDBACK_LIMIT")
        if limit is None:
            per_minute = current_app.config["KGRAG_SETTINGS"].server.feedback_per_minute
            limit = current_app.config["KGRAG_FEEDBACK_LIMIT"] = RateLimit(per_minute)
    wait = limit.wait_s(request.remote_addr or "unknown")
    if wait:
        raise RateLimited(math.ceil(wait), f"at most {limit.count} feedback posts a minute from one client")


@bp.post("/v1/feedback")
def add_feedback():
    _limit()
    req = FeedbackRequest.model_validate(json_body())
    docs = _doc_ids([c.chunk_id for c in req.citations] + req.relevant_chunks)
    item = Feedback(
        rating=req.rating, question=req.question.strip(), answer=req.answer, comment=req.comment.strip(),
        citations=[{"n": c.n, "chunk_id": c.chunk_id, "doc_id": docs[c.chunk_id]} for c in req.citations],
        relevant=[ChunkRef(c, docs[c]) for c in dict.fromkeys(req.relevant_chunks)],
        trace_id=req.trace_id,
    )
    feedback_store().add(item)
    gold = list(dict.fromkeys(doc for _, doc in gold_chunks(item)))
    return jsonify(FeedbackStored(id=item.id, created_at=item.created_at, gold_ids=gold).model_dump()), 201
