"""POST /v1/reranker/train (admin): fine-tune the cross-encoder on this knowledge base in the
background (``kgrag.reranker.background``); its progress is ``GET /v1/jobs/<id>``."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request
from pydantic import BaseModel, ConfigDict, Field

from kgrag.server.auth import require_admin
from kgrag.server.errors import ApiError
from kgrag.server.jobs import JOB_HEADER, VALID_ID, finish
from kgrag.server.schemas import json_body

bp = Blueprint("reranker", __name__)


class TrainRequest(BaseModel):
    """``minutes``: stop training after this long (the steps done are kept); ``queries``: training
    queries at most (default: the tuned number)."""

    model_config = ConfigDict(extra="forbid")
    minutes: float | None = Field(None, ge=0.5, le=24 * 60)
    queries: int | None = Field(None, ge=10, le=100_000)


@bp.post("/v1/reranker/train")
@require_admin
def train():
    from kgrag.reranker.background import TrainingBusy, needs_torch, start_training

    body = TrainRequest.model_validate(json_body() if request.content_length else {})
    if (missing := needs_torch()) is not None:
        raise ApiError(400, "unavailable", missing)
    job_id = request.headers.get(JOB_HEADER)
    if job_id is not None and not VALID_ID.match(job_id):
        raise ApiError(400, "invalid_header", f"{JOB_HEADER} must be 1-128 letters, digits or ._:-")
    job = current_app.config["KGRAG_JOBS"].start(job_id, "reranker-train")
    if job is None:
        raise ApiError(409, "conflict", f"job {job_id!r} is running")

    def on_progress(progress) -> None:
        job.stage, job.done, job.total = progress.stage, progress.done, progress.total
        job.message = progress.detail or None

    def on_end(report, error) -> None:
        job.stage = "failed" if error is not None else "done"
        if error is not None:
            finish(job, failed=True, message=f"{type(error).__name__}: {error}")
        else:
            finish(job, failed=False, message=f"installed in {report.model_dir}: {report.steps} steps, "
                                              f"held-back queries first {report.held_back.get('reranker_first')}%")

    try:
        start_training(current_app.config["KGRAG_COMPONENTS"], minutes=body.minutes, queries=body.queries,
                       on_progress=on_progress, on_end=on_end)
    except TrainingBusy as e:
        finish(job, failed=True, message=str(e))
        raise ApiError(409, "conflict", str(e)) from None
    return jsonify({"job": job.id, "state": job.state}), 202
