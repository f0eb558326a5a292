"""The Elasticsearch index definition of the chunk index: mapping, document shape, and the
query clauses it serves.

One index per knowledge base (``elasticsearch.index``), created by kgrag with an explicit
mapping (``dynamic: strict``: a document with an unknown field is refused instead of growing
the mapping). Why the text fields hold pre-analysed terms is explained in ``elasticsearch.chunks``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from kgrag.facets import DATE, DOC_TYPE, LANGUAGE, TAGS, chunk_date, chunk_tags
from kgrag.stores.base import StoreError
from kgrag.stores.filters import SearchFilter
from kgrag.text.analyze import segment
from kgrag.types import Chunk

# Bumped when the mapping changes incompatibly; an index of another version is refused.
MAPPING_VERSION = 1
META_KEY = "kgrag_chunk_index"
ANALYZER = "kgrag_terms"
HEADING_FIELD = "heading_terms"
BODY_FIELD = "body_terms"
VECTOR_FIELD = "vector"
# Fields only search uses: left out of what get/iter_chunks read back.
SEARCH_ONLY_FIELDS = [HEADING_FIELD, BODY_FIELD]
MAX_ID_BYTES = 512  # Elasticsearch's limit on a document _id
# Largest result window Elasticsearch allows by default (index.max_result_window).
MAX_WINDOW = 10_000

# Document facets (kgrag.facets), copied out of the metadata object (which is not indexed) into
# fields a filter can use. Added to an older index's mapping when it is opened (additive, so
# allowed on a live index); its chunks written before lack them: unknown, matching no filter.
FACET_FIELDS: dict[str, dict[str, Any]] = {
    LANGUAGE: {"type": "keyword"},
    DOC_TYPE: {"type": "keyword"},
    TAGS: {"type": "keyword"},
    DATE: {"type": "date", "format": "strict_date"},
}

_STORED_ONLY_TEXT = {"type": "text", "index": False}
_STORED_ONLY_LONG = {"type": "long", "index": False, "doc_values": False}
_TERMS_TEXT = {
    "type": "text",
    "analyzer": ANALYZER,
    # BM25 needs term frequencies and norms, never positions (no phrase queries): smaller index.
    "index_options": "freqs",
}


def index_settings() -> dict[str, Any]:
    # The terms arrive analysed (kgrag.text.analyze): the index only splits them on spaces,
    # and lower-cases nothing, exactly like the SQLite FTS5 store's unicode61 tokenizer there.
    return {"analysis": {"analyzer": {ANALYZER: {"type": "custom", "tokenizer": "whitespace"}}}}


def vector_mapping(dim: int, knn: bool) -> dict[str, Any]:
    if knn:
        return {
            "type": "dense_vector",
            "dims": dim,
            "index": True,
            "similarity": "cosine",
            # Plain float HNSW: since 8.14 the default is int8-quantised HNSW, whose scores are
            # approximate; chunk vectors are few enough per shard to keep exact floats.
            "index_options": {"type": "hnsw", "m": 16, "ef_construction": 100},
        }
    # No kNN (a BM25-only index): vectors are kept in _source so transfer can still move them.
    return {"type": "float", "index": False, "doc_values": False}


def index_mappings(dim: int | None, knn: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "chunk_id": {"type": "keyword"},
        "doc_id": {"type": "keyword"},
        "source": {"type": "keyword"},
        "section_path": {"type": "keyword"},
        "title": _STORED_ONLY_TEXT,
        "text": _STORED_ONLY_TEXT,
        "page": _STORED_ONLY_LONG,
        "start": _STORED_ONLY_LONG,
        "end": _STORED_ONLY_LONG,
        "ordinal": {"type": "long"},  # sorts iter_chunks within a document
        "parent_id": {"type": "keyword"},
        "is_parent": {"type": "boolean"},
        "metadata": {"type": "object", "enabled": False},  # free-form JSON, never searched
        **FACET_FIELDS,
        HEADING_FIELD: _TERMS_TEXT,
        BODY_FIELD: _TERMS_TEXT,
    }
    if dim is not None:
        properties[VECTOR_FIELD] = vector_mapping(dim, knn)
    return {"dynamic": "strict", "_meta": meta(dim, knn), "properties": properties}


def meta(dim: int | None, knn: bool) -> dict[str, Any]:
    """The mapping's ``_meta`` (replaced as a whole by every mapping update)."""
    out: dict[str, Any] = {META_KEY: MAPPING_VERSION, "knn": knn}
    if dim is not None:
        out["dim"] = dim
    return out


def filter_clauses(filters: SearchFilter | None) -> list[dict[str, Any]]:
    """A SearchFilter → Elasticsearch filter clauses on the keyword fields (exact and
    case-sensitive, like ``SearchFilter.matches``), always with ``is_parent: false``."""
    clauses: list[dict[str, Any]] = [{"term": {"is_parent": False}}]
    if filters is None:
        return clauses
    if filters.doc_id is not None:
        ids = filters.doc_id
        clauses.append({"term": {"doc_id": ids[0]}} if len(ids) == 1 else {"terms": {"doc_id": list(ids)}})
    if filters.section_path_prefix:  # "" is a prefix of everything: no clause
        # A prefix query takes its value literally (no wildcard or regex syntax: *, ? and backslash
        # are plain characters), unlike wildcard/regexp queries.
        clauses.append({"prefix": {"section_path": filters.section_path_prefix}})
    if filters.source is not None:
        clauses.append({"term": {"source": filters.source}})
    for key in (LANGUAGE, DOC_TYPE, TAGS):  # tags: a terms query on a multi-valued field is any-of
        values = getattr(filters, key)
        if values is not None:
            clauses.append({"terms": {key: list(values)}})
    if filters.date_from is not None or filters.date_to is not None:
        bounds = {"gte": filters.date_from, "lte": filters.date_to}
        clauses.append({"range": {DATE: {k: v for k, v in bounds.items() if v is not None}}})
    return clauses


def facet_fields(metadata: dict[str, Any]) -> dict[str, Any]:
    """The filterable facet fields of one chunk document: only values ``SearchFilter.matches``
    would read, so a malformed one is unknown on both sides."""
    out: dict[str, Any] = {}
    for key in (LANGUAGE, DOC_TYPE):
        if isinstance(metadata.get(key), str):
            out[key] = metadata[key]
    if tags := chunk_tags(metadata):
        out[TAGS] = tags
    if (day := chunk_date(metadata)) is not None:
        out[DATE] = day
    return out


def bm25_query(terms: list[str], heading_weight: float, filters: list[dict[str, Any]]) -> dict[str, Any]:
    """BM25F over heading and body as one field, heading terms counted ``heading_weight`` times:
    what FTS5's ``bm25(chunk_fts, heading_weight, 1.0)`` computes in the SQLite store."""
    return {
        "bool": {
            "must": [
                {
                    "combined_fields": {
                        # Terms are analyser output joined by spaces: the whitespace analyser
                        # splits them back, nothing in them is query syntax.
                        "query": " ".join(terms),
                        "fields": [f"{HEADING_FIELD}^{heading_weight:g}", BODY_FIELD],
                        "operator": "or",
                    }
                }
            ],
            "filter": filters,
        }
    }


def check_ids(chunks: list[Chunk]) -> None:
    seen: set[str] = set()
    for c in chunks:
        if c.id in seen:
            raise StoreError(f"chunk id {c.id!r} appears twice in one upsert")
        if not c.id or len(c.id.encode("utf-8")) > MAX_ID_BYTES:
            raise StoreError(f"chunk id must be 1 to {MAX_ID_BYTES} bytes for Elasticsearch, got {c.id[:80]!r}")
        seen.add(c.id)


def document(c: Chunk, vector: np.ndarray | None) -> dict[str, Any]:
    try:
        json.dumps(c.metadata)  # same rule as the SQLite store: plain JSON only
    except (TypeError, ValueError) as e:
        raise StoreError(f"chunk {c.id!r}: metadata is not JSON-serializable: {e}") from e
    doc: dict[str, Any] = {
        "chunk_id": c.id, "doc_id": c.doc_id, "source": c.source, "section_path": c.section_path,
        "title": c.title, "text": c.text, "page": c.page, "start": c.start, "end": c.end,
        "ordinal": c.ordinal, "parent_id": c.parent_id, "is_parent": c.is_parent,
        "metadata": c.metadata,
        **facet_fields(c.metadata),
    }
    if c.searchable:
        doc[HEADING_FIELD] = segment(c.heading)
        doc[BODY_FIELD] = segment(c.text)
    if vector is not None:
        doc[VECTOR_FIELD] = vector.tolist()
    return doc


def chunk_from_source(src: dict[str, Any]) -> Chunk:
    return Chunk(
        id=src["chunk_id"], doc_id=src["doc_id"], text=src["text"], source=src["source"],
        title=src["title"], section_path=src["section_path"], page=src.get("page"),
        start=src["start"], end=src["end"], ordinal=src["ordinal"], parent_id=src.get("parent_id"),
        is_parent=src["is_parent"], metadata=src.get("metadata") or {},
    )
