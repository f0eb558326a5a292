"""Liveness, readiness and the web page."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify

from kgrag.errors import StoreDamaged
from kgrag.server.errors import redact_paths
from kgrag.stores.consistency import readiness_problems

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz():
    return jsonify({"status": "ok"})


@bp.get("/readyz")
def readyz():
    """Ready when both stores answer, are sound (files in place, ``PRAGMA quick_check``; a
    server reachable) and agree with each other (``kgrag.stores.consistency``), and the models
    are loaded (the app warms them at start). 503 names each problem otherwise."""
    components = current_app.config["KGRAG_COMPONENTS"]
    try:
        problems = readiness_problems(components.journal, components.chunk_index, components.graph)
    except Exception as exc:  # a store that cannot answer: not ready, say why
        problems = [_problem(exc)]
    if problems:
        problems = [redact_paths(p) for p in problems]
        return jsonify({"status": "unavailable", "reason": "; ".join(problems), "problems": problems}), 503
    try:
        graph = components.graph.stats(relations=False)
        chunks = components.chunk_index.count(searchable_only=True)
    except Exception as exc:  # a store that cannot answer: not ready, say why
        reason = redact_paths(_problem(exc))
        return jsonify({"status": "unavailable", "reason": reason, "problems": [reason]}), 503
    ready = current_app.config.get("KGRAG_WARM", False)
    body = {"status": "ready" if ready else "starting", "documents": graph.get("documents", 0),
            "chunks": chunks, "entities": graph.get("entities", 0),
            "reranker": components.reranker.name if components.reranker else None,
            "llm": components.settings.llm.model}
    return jsonify(body), 200 if ready else 503


def _problem(exc: Exception) -> str:
    """A damaged store says which file and what to run; anything else by its type and text."""
    return str(exc) if isinstance(exc, StoreDamaged) else f"{type(exc).__name__}: {exc}"


@bp.get("/")
def index():
    return current_app.send_static_file("index.html")


@bp.get("/favicon.ico")
def favicon():
    """Browsers ask for /favicon.ico whatever the page links; answer with the page's icon."""
    response = current_app.send_static_file("favicon.svg")
    response.mimetype = "image/svg+xml"
    return response
