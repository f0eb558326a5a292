"""GET /v1/entities?q= (search by name or alias) and GET /v1/entities/<key> (aliases,
neighbours, the chunks that mention it)."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request

from kgrag.server.errors import ApiError
from kgrag.types import Entity

bp = Blueprint("entities", __name__)
MAX_LIMIT = 100


def _graph():
    return current_app.config["KGRAG_COMPONENTS"].graph


def _int_arg(name: str, default: int, low: int, high: int) -> int:
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, "invalid_request", f"{name} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise ApiError(400, "invalid_request", f"{name} must be between {low} and {high}")
    return value


@bp.get("/v1/entities")
def search_entities():
    q = request.args.get("q", "").strip()
    if not q:
        raise ApiError(400, "invalid_request", "query parameter q is required")
    limit = _int_arg("limit", 20, 1, MAX_LIMIT)
    graph = _graph()
    found = graph.find_entities(q, limit)
    counts = graph.entity_chunk_counts([e.key for e in found])
    return jsonify({"entities": [
        {"key": e.key, "name": e.name, "type": e.type, "aliases": e.aliases,
         "curated": e.curated, "chunks": counts.get(e.key, 0)}
        for e in found
    ]})


@bp.get("/v1/entities/<path:key>")
def get_entity(key: str):
    graph = _graph()
    entity = graph.get_entity(key)
    if entity is None:
        raise ApiError(404, "not_found", f"no entity with key {key!r}")
    limit = _int_arg("limit", 20, 1, MAX_LIMIT)
    around = graph.neighbors([key], hops=1, limit=limit + 1)
    neighbours = []
    names: dict[str, Entity | None] = {}
    for other, path in around.items():
        if other == key:
            continue
        names.setdefault(other, graph.get_entity(other))
        e = names[other]
        neighbours.append({
            "key": other, "name": e.name if e else other, "relation": path.edges[0] if path.edges else None,
            "weight": path.weights[0] if path.weights else None,
        })
    neighbours.sort(key=lambda n: (-(n["weight"] or 0), n["key"]))
    mentions = graph.mentions_of([key]).get(key, [])
    return jsonify({
        "key": entity.key, "name": entity.name, "type": entity.type, "aliases": entity.aliases,
        "curated": entity.curated, "mention_chunks": len(mentions),
        "neighbours": neighbours,
        "chunks": [{"chunk_id": cid, "count": count} for cid, count in mentions[:limit]],
    })
