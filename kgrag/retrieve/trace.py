"""JSON shapes of retrieval results: one place, shared by the HTTP API, the CLI and eval."""

from __future__ import annotations

from typing import Any

from kgrag.retrieve.types import Hit, Query, RetrievalResult
from kgrag.types import Chunk

SNIPPET_CHARS = 300


def chunk_ref(chunk: Chunk) -> dict[str, Any]:
    return {
        "chunk_id": chunk.id,
        "doc_id": chunk.doc_id,
        "source": chunk.source,
        "title": chunk.title,
        "page": chunk.page,
        "section_path": chunk.section_path,
        "start": chunk.start,
        "end": chunk.end,
    }


def hit_dict(hit: Hit, with_text: bool = True) -> dict[str, Any]:
    out = chunk_ref(hit.chunk)
    out["score"] = round(hit.score, 6)
    if with_text:
        out["text"] = hit.chunk.text
        out["snippet"] = hit.chunk.text[:SNIPPET_CHARS]
        if hit.parent is not None:
            out["parent"] = {"chunk_id": hit.parent.id, "text": hit.parent.text}
    out["trace"] = {
        "paths": {name: {"rank": r.rank, "score": round(r.score, 6)} for name, r in hit.paths.items()},
        "fused_rank": hit.fused_rank,
        "fused_score": round(hit.fused_score, 6),
        "rerank_rank": hit.rerank_rank,
        "rerank_score": None if hit.rerank_score is None else round(hit.rerank_score, 6),
        "placed_by": hit.placed_by,
        "graph_paths": [
            {"nodes": p.nodes, "edges": p.edges, "weights": p.weights, "hops": p.hops}
            for p in hit.graph_paths
        ],
    }
    return out


def trace_dict(result: RetrievalResult) -> dict[str, Any]:
    q = result.query
    return {
        "modes": list(q.modes),
        "linked_entities": [
            {"surface": le.surface, "key": le.key, "name": le.name, "method": le.method,
             "score": le.score, "candidates": le.candidates}
            for le in q.linked
        ],
        "described_entities": [
            {"surface": le.surface, "key": le.key, "name": le.name, "method": le.method,
             "score": le.score, "candidates": le.candidates}
            for le in q.described
        ],
        "expansions": q.expansions,
        "feedback_entities": q.feedback,
        "skipped_paths": q.skipped,
        "conversation": None if q.completion is None else q.completion.trace(carried_entities(q)),
        "path_weights": result.path_weights,
        "path_weight_reasons": result.weight_reasons,
        "evidence_set": result.evidence_set,
        "reranker": result.reranker,
        "below_threshold": result.below_threshold,
        "gate": result.gate,
        "timings_ms": result.timings_ms,
        "iteration": None if result.iteration is None else result.iteration.trace(),
        "rewriting": [r.trace() for r in result.rewriting],
        "llm_calls": result.llm_calls,
        "understanding": None if q.understanding is None else q.understanding.trace(),
        "exclusion": None if q.exclusion is None else q.exclusion.trace(),
        "warnings": list(result.warnings),
    }


def carried_entities(q: Query) -> list:
    """Entities linked from the carried earlier question(s), not from the follow-up itself."""
    c = q.completion
    if c is None or not c.followup:
        return []
    own = c.original.casefold()
    return [le for le in q.linked if le.surface.casefold() not in own]


def result_dict(result: RetrievalResult) -> dict[str, Any]:
    return {"hits": [hit_dict(h) for h in result.hits], "trace": trace_dict(result)}
