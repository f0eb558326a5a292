"""GET /v1/jobs/<id>: how far a long admin request has got (``kgrag.server.jobs``)."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify

from kgrag.server.auth import require_admin
from kgrag.server.errors import ApiError

bp = Blueprint("jobs", __name__)


@bp.get("/v1/jobs/<job_id>")
@require_admin
def job_status(job_id: str):
    job = current_app.config["KGRAG_JOBS"].get(job_id)
    if job is None:
        raise ApiError(404, "not_found", f"no job {job_id!r} (the server keeps its last jobs in memory)")
    return jsonify(job.to_dict())
