"""GET /v1/entities?q= (search by name or alias) and GET /v1/entities/<key> (aliases,
neighbours within 1–2 hops with edge weights, the chunks that mention it): what the web page's
graph explorer reads. Only the GraphStore and ChunkIndex protocols' public methods are used, so
the explorer works on every graph store (SQLite + networkx, Neo4j)."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify

from kgrag.server.errors import ApiError
from kgrag.server.params import EntityParams, EntitySearchParams, RelationParams, query_params

bp = Blueprint("entities", __name__)


def _graph():
    return current_app.config["KGRAG_COMPONENTS"].graph


@bp.get("/v1/entities")
def search_entities():
    params = query_params(EntitySearchParams)
    q = params.q.strip()
    if not q:
        raise ApiError(400, "invalid_request", "q: a name or alias is required")
    graph = _graph()
    found = graph.find_entities(q, params.limit)
    counts = graph.entity_chunk_counts([e.key for e in found])
    return jsonify({"entities": [
        {"key": e.key, "name": e.name, "type": e.type, "aliases": e.aliases,
         "curated": e.curated, "chunks": counts.get(e.key, 0)}
        for e in found
    ]})


@bp.get("/v1/entities/<path:key>")
def get_entity(key: str):
    """``hops`` (1–2, default 1): how far neighbours reach; ``limit``: neighbours and chunks shown."""
    graph = _graph()
    entity = graph.get_entity(key)
    if entity is None:
        raise ApiError(404, "not_found", f"no entity with key {key!r}")
    params = query_params(EntityParams)
    limit, hops = params.limit, params.hops
    mentions = graph.mentions_of([key]).get(key, [])
    return jsonify({
        "key": entity.key, "name": entity.name, "type": entity.type, "aliases": entity.aliases,
        "curated": entity.curated, "mention_chunks": len(mentions), "hops": hops,
        "neighbours": _neighbours(graph, key, hops, limit),
        "chunks": _chunks(mentions[:limit]),
    })


@bp.get("/v1/relations")
def get_relation():
    """An edge of the graph explorer's drawing: the relations between ``a`` and ``b`` (either
    direction) and the chunks that evidence them, heaviest first."""
    params = query_params(RelationParams)
    graph = _graph()
    for key in (params.a, params.b):
        if graph.get_entity(key) is None:
            raise ApiError(404, "not_found", f"no entity with key {key!r}")
    evidence = graph.relation_evidence(params.a, params.b, params.limit)
    relations_in: dict[str, int] = {}  # chunk id -> how many of the relations it evidences
    for _, chunk_id, _ in evidence:
        relations_in[chunk_id] = relations_in.get(chunk_id, 0) + 1
    return jsonify({
        "a": params.a, "b": params.b, "weight": graph.relation_weight(params.a, params.b),
        "relations": [{"type": t, "chunk_id": c, "weight": w} for t, c, w in evidence],
        "chunks": _chunks(list(relations_in.items())),
    })


def _neighbours(graph, key: str, hops: int, limit: int) -> list[dict]:
    """Entities within ``hops`` edges, nearest first, then by the weight of the edge reaching
    them; each with its path from ``key`` (``via``: the entities in between)."""
    around = graph.neighbors([key], hops=hops, limit=limit + 1)
    out = []
    for other, path in around.items():
        if other == key:
            continue
        entity = graph.get_entity(other)
        out.append({
            "key": other, "name": entity.name if entity else other, "type": entity.type if entity else None,
            "hops": path.hops, "via": path.nodes[1:-1],
            "relation": path.edges[-1] if path.edges else None,
            "weight": path.weights[-1] if path.weights else None,
            "weights": list(path.weights),
        })
    out.sort(key=lambda n: (n["hops"], -(n["weight"] or 0), n["key"]))
    return out[:limit]


def _chunks(mentions: list[tuple[str, int]]) -> list[dict]:
    """The mentioning chunks with where they come from and their text (from the chunk index)."""
    found = {c.id: c for c in current_app.config["KGRAG_COMPONENTS"].chunk_index.get([cid for cid, _ in mentions])}
    out = []
    for cid, count in mentions:
        chunk = found.get(cid)
        out.append({"chunk_id": cid, "count": count} | ({} if chunk is None else {
            "doc_id": chunk.doc_id, "title": chunk.title, "source": chunk.source, "page": chunk.page,
            "section_path": chunk.section_path, "text": chunk.text}))
    return out
