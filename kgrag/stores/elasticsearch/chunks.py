"""ChunkIndex on Elasticsearch 8: chunk text and metadata, BM25 and dense kNN in one index.

Analysis: pre-segmented text, not the built-in analysers. Every searchable chunk carries two
text fields, heading (title + section path) and body, filled with ``kgrag.text.analyze.segment``
output: jieba words for Chinese, Snowball-stemmed English without stop words, joined by
spaces. The index splits them on whitespace only, and queries go through the same ``analyze``.
Why, instead of ``english`` + ``cjk`` analysers on raw text:

- One analysis for both stores: the SQLite FTS5 store indexes exactly these terms, so BM25
  ranks alike in both and a knowledge base moved with ``kgrag transfer`` answers the same
  keyword queries. Built-in analysers differ from ours in every language: ``english`` stems
  with Porter (not Porter2) and keeps other stop words; ``cjk`` indexes overlapping character
  bigrams (最近公共祖先 → 最近 近公 公共 共祖 祖先), so a single-character word (树) inside a run
  never matches, and bigrams such as 近公 that are no word add noise; mixed text needs both
  analysers on two sub-fields and a query that combines them.
- Retrieval quality is a tie, and pre-segmented terms agree more often with the SQLite store
  and query faster (``scripts/bench_es_analysis.py``; docs/decisions.md, "Elasticsearch text
  analysis"). The built-in pair also costs two analysed copies of every text and a query over
  both.
- Cost: jieba runs in the kgrag process at upsert (as it does for the SQLite store), not in
  Elasticsearch; the ``_analyze`` API and Kibana show our terms, not the raw text (which is
  stored, unindexed, in ``text``).

Scoring: ``combined_fields`` (BM25F) over heading^2 and body treats them as one field in which
heading terms count twice: what FTS5's ``bm25(chunk_fts, 2.0, 1.0)`` computes. (osmem-server
scores combined_fields as a sum of per-field scores instead, so CI cannot judge the heading
weighting: it costs recall there for both analyses alike; docs/decisions.md, "Elasticsearch
text analysis".)

Dense: ``dense_vector`` with float HNSW and cosine similarity, its size fixed by ``dim`` or by
the first vectors written. Elasticsearch reports cosine kNN scores as ``(1 + cos) / 2``; the
store converts them back to cosine, as the protocol promises. Parents are stored without
vectors or terms and every search filters ``is_parent: false``.

Consistency: each write ends with a refresh (bulk then one ``_refresh``; delete-by-query with
``refresh=true``), so a write is visible to the next read, as the contract requires. A bulk
upsert is not atomic: when some items fail the others are kept and StoreError is raised (the
ingestion protocol re-writes the whole document on the next run).

``knn=False`` keeps vectors in ``_source`` only (no HNSW graph) and refuses dense search: a
BM25-only index, also what servers without ``dense_vector`` (osmem-server in CI) can hold.

Limitation: Elasticsearch 9.2+ leaves vectors out of ``_source`` by default for new indices
(``index.mapping.exclude_source_vectors``); on such a server ``iter_chunks`` (transfer) would
return no vectors. The target is Elasticsearch 8, which the pinned 8.x client speaks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kgrag.errors import StoreError
from kgrag.facets import FacetCatalog
from kgrag.stores.base import check_vectors
from kgrag.stores.elasticsearch import mapping as m
from kgrag.stores.elasticsearch.client import build_es_client, es_errors, redact_url
from kgrag.stores.filters import SearchFilter
from kgrag.text.analyze import analyze
from kgrag.types import Chunk, ScoredId

if TYPE_CHECKING:
    from kgrag.config import ElasticsearchSettings

_MGET_BATCH = 1000


class ElasticsearchChunkIndex:
    """ChunkIndex in one Elasticsearch index (created with kgrag's mapping when missing).

    ``client`` is an ``elasticsearch.Elasticsearch``; ``url`` only names the server in errors.
    ``dim`` pins the vector size up front (else the first vectors fix it); ``knn=False`` makes
    a BM25-only index; ``heading_weight`` (>= 1) weights title/section terms against the body.
    """

    def __init__(
        self,
        client: Any,
        index: str,
        *,
        url: str = "elasticsearch",
        dim: int | None = None,
        knn: bool = True,
        heading_weight: float = 2.0,
        owns_client: bool = False,
    ):
        if heading_weight < 1.0:
            # combined_fields takes boosts >= 1 only.
            raise StoreError(f"heading_weight must be at least 1.0 for Elasticsearch, got {heading_weight}")
        if dim is not None and dim <= 0:
            raise StoreError(f"dim must be positive, got {dim}")
        self._client = client
        self.index = index
        self.url = redact_url(url)
        self.heading_weight = float(heading_weight)
        self._owns_client = owns_client
        self._dim: int | None = None
        self._knn = knn
        self._open(dim, knn)

    @classmethod
    def from_settings(
        cls, settings: ElasticsearchSettings, dim: int | None = None, knn: bool = True
    ) -> ElasticsearchChunkIndex:
        client = build_es_client(settings)
        try:
            return cls(client, settings.index, url=settings.url, dim=dim, knn=knn, owns_client=True)
        except BaseException:
            client.close()
            raise

    # -- index and mapping -----------------------------------------------------------------
    def _open(self, dim: int | None, knn: bool) -> None:
        """Adopt the existing index's mapping, or create the index (idempotent under races)."""
        from elasticsearch import BadRequestError

        mappings = self._read_mappings()
        if mappings is None:
            with es_errors(self.url, f"create index {self.index!r}"):
                try:
                    self._client.indices.create(
                        index=self.index, settings=m.index_settings(), mappings=m.index_mappings(dim, knn)
                    )
                except BadRequestError as e:
                    if e.error != "resource_already_exists_exception":
                        raise
            mappings = self._read_mappings()  # ours, or the one a concurrent creator made
            if mappings is None:
                raise StoreError(f"Elasticsearch at {self.url}: index {self.index!r} vanished after creation")
        self._adopt(mappings, dim, knn)

    def _read_mappings(self) -> dict[str, Any] | None:
        from elasticsearch import NotFoundError

        with es_errors(self.url, f"read the mapping of index {self.index!r}"):
            try:
                resp = self._client.indices.get_mapping(index=self.index)
            except NotFoundError:
                return None
        found = list(resp.body.values())
        if len(found) != 1:
            raise StoreError(
                f"Elasticsearch at {self.url}: {self.index!r} names {len(found)} indices; "
                "elasticsearch.index must name one index (or an alias of one)"
            )
        return found[0].get("mappings", {})

    def _adopt(self, mappings: dict[str, Any], dim: int | None, knn: bool) -> None:
        meta = mappings.get("_meta") or {}
        if meta.get(m.META_KEY) != m.MAPPING_VERSION:
            raise StoreError(
                f"Elasticsearch at {self.url}: index {self.index!r} exists but was not created by this "
                f"kgrag version (mapping _meta.{m.META_KEY}={meta.get(m.META_KEY)!r}, expected "
                f"{m.MAPPING_VERSION}); choose another elasticsearch.index or delete that index"
            )
        vector = mappings.get("properties", {}).get(m.VECTOR_FIELD)
        stored_knn = bool(meta.get("knn", True))
        if knn != stored_knn:
            raise StoreError(
                f"Elasticsearch at {self.url}: index {self.index!r} was created with knn={stored_knn}, "
                f"opened with knn={knn}"
            )
        stored_dim = None
        if vector is not None:
            stored_dim = int(vector["dims"]) if vector.get("type") == "dense_vector" else meta.get("dim")
        if dim is not None and stored_dim is not None and dim != stored_dim:
            raise StoreError(
                f"Elasticsearch at {self.url}: index {self.index!r} holds {stored_dim}-dim vectors, "
                f"asked for dim={dim}"
            )
        self._dim = stored_dim if stored_dim is not None else dim
        if self._dim is not None and vector is None:
            self._add_vector_field(self._dim)  # pinned by dim= on an index made without one
        missing = {k: v for k, v in m.FACET_FIELDS.items() if k not in mappings.get("properties", {})}
        if missing:  # an index created before facets were recorded
            with es_errors(self.url, f"add the facet fields to index {self.index!r}"):
                self._client.indices.put_mapping(index=self.index, properties=missing)

    def _add_vector_field(self, dim: int) -> None:
        """Add the vector field to the mapping; a concurrent writer that fixed another size wins
        and this one gets a StoreError naming both sizes."""
        from elasticsearch import BadRequestError

        with es_errors(self.url, f"add {dim}-dim vectors to index {self.index!r}"):
            try:
                self._client.indices.put_mapping(
                    index=self.index,
                    properties={m.VECTOR_FIELD: m.vector_mapping(dim, self._knn)},
                    meta=m.meta(dim, self._knn),
                )
            except BadRequestError:
                pass  # most likely a conflicting size: reported from the mapping just below
        stored = self._stored_dim()
        if stored != dim:
            raise StoreError(f"Elasticsearch at {self.url}: vectors have dim {dim}, the index holds dim {stored}")
        self._dim = dim

    def _stored_dim(self) -> int | None:
        mappings = self._read_mappings() or {}
        vector = mappings.get("properties", {}).get(m.VECTOR_FIELD)
        if vector is None:
            return None
        if vector.get("type") == "dense_vector":
            return int(vector["dims"])
        return (mappings.get("_meta") or {}).get("dim")

    @property
    def dim(self) -> int | None:
        """Vector dimension, once fixed (by ``dim=`` or the first vectors written)."""
        return self._dim

    @property
    def knn(self) -> bool:
        """Whether this index answers ``search_dense``."""
        return self._knn

    # -- writes ----------------------------------------------------------------------------
    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> None:
        from elasticsearch.helpers import bulk

        chunks = list(chunks)
        searchable = [c for c in chunks if c.searchable]
        matrix = check_vectors(self.index, vectors, len(searchable))
        m.check_ids(chunks)
        if not chunks:
            return
        if matrix is not None and len(searchable):
            dim = matrix.shape[1]
            if self._dim is None:
                self._dim = self._stored_dim()  # another process may have fixed it meanwhile
            if self._dim is None:
                self._add_vector_field(dim)
            elif dim != self._dim:
                raise StoreError(f"Elasticsearch at {self.url}: vectors have dim {dim}, the index holds dim {self._dim}")
        row_of = {c.id: i for i, c in enumerate(searchable)} if matrix is not None else {}
        actions = [
            {
                "_op_type": "index",  # replaces the whole document: old terms and vector go
                "_index": self.index,
                "_id": c.id,
                "_source": m.document(c, matrix[row_of[c.id]] if c.id in row_of else None),
            }
            for c in chunks
        ]
        with es_errors(self.url, f"write {len(actions)} chunks to index {self.index!r}"):
            _, errors = bulk(
                self._client, actions, chunk_size=500, raise_on_error=False, max_retries=2
            )
            self._client.indices.refresh(index=self.index)
        if errors:
            first = next(iter(errors[0].values()))
            raise StoreError(
                f"Elasticsearch at {self.url}: {len(errors)} of {len(actions)} chunks were not written "
                f"to {self.index!r}; first: chunk {first.get('_id')!r}: {first.get('error')}"
            )

    def replace_document(self, doc_id: str, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> int:
        """The new chunks are written (same ids overwritten), then the document's other chunks
        are deleted; returns how many were deleted. Not one transaction (Elasticsearch has
        none): a reader may meet the new chunks beside old ones of other ids for one refresh.
        Both steps are idempotent, so the journal's recovery may repeat them."""
        if not isinstance(doc_id, str):
            raise StoreError(f"doc_id must be a string, got {type(doc_id).__name__}")
        chunks = list(chunks)
        self.upsert(chunks, vectors)
        keep = [c.id for c in chunks]
        with es_errors(self.url, f"delete old chunks of {doc_id!r} from index {self.index!r}"):
            resp = self._client.delete_by_query(
                index=self.index,
                query={"bool": {"filter": [{"term": {"doc_id": doc_id}}], "must_not": [{"ids": {"values": keep}}]}},
                refresh=True,
            )
        return int(resp["deleted"])

    def delete_document(self, doc_id: str) -> int:
        if not isinstance(doc_id, str):
            raise StoreError(f"doc_id must be a string, got {type(doc_id).__name__}")
        with es_errors(self.url, f"delete document {doc_id!r} from index {self.index!r}"):
            resp = self._client.delete_by_query(
                index=self.index, query={"term": {"doc_id": doc_id}}, refresh=True
            )
        return int(resp["deleted"])

    # -- reads -----------------------------------------------------------------------------
    def get(self, ids: Sequence[str]) -> list[Chunk]:
        ids = list(ids)
        # An id Elasticsearch could not store cannot be there: asking would be an error.
        wanted = [i for i in dict.fromkeys(ids) if len(i.encode("utf-8")) <= m.MAX_ID_BYTES]
        found: dict[str, Chunk] = {}
        with es_errors(self.url, f"get chunks from index {self.index!r}"):
            for start in range(0, len(wanted), _MGET_BATCH):
                resp = self._client.mget(
                    index=self.index,
                    ids=wanted[start : start + _MGET_BATCH],
                    source_excludes=m.SEARCH_ONLY_FIELDS + [m.VECTOR_FIELD],
                )
                for doc in resp["docs"]:
                    if doc.get("found"):
                        found[doc["_id"]] = m.chunk_from_source(doc["_source"])
        return [found[i] for i in ids if i in found]

    def document_ids(self) -> set[str]:
        """Paged with a composite aggregation: any number of documents."""
        out: set[str] = set()
        after: dict[str, Any] | None = None
        with es_errors(self.url, f"list document ids of index {self.index!r}"):
            while True:
                composite: dict[str, Any] = {"size": 1000, "sources": [{"doc_id": {"terms": {"field": "doc_id"}}}]}
                if after is not None:
                    composite["after"] = after
                resp = self._client.search(index=self.index, size=0, aggs={"docs": {"composite": composite}})
                agg = resp["aggregations"]["docs"]
                out.update(b["key"]["doc_id"] for b in agg["buckets"])
                after = agg.get("after_key")
                if not agg["buckets"] or after is None:
                    return out

    def chunk_ids_by_document(self) -> dict[str, set[str]]:
        """Pages with ``search_after`` over (doc_id, chunk_id), ids only."""
        out: dict[str, set[str]] = {}
        after: list[Any] | None = None
        while True:
            with es_errors(self.url, f"list chunk ids of index {self.index!r}"):
                resp = self._client.search(
                    index=self.index, size=m.MAX_WINDOW, sort=[{"doc_id": "asc"}, {"chunk_id": "asc"}],
                    search_after=after, source=["doc_id", "chunk_id"], track_total_hits=False,
                )
            hits = resp["hits"]["hits"]
            for hit in hits:
                out.setdefault(hit["_source"]["doc_id"], set()).add(hit["_id"])
            if len(hits) < m.MAX_WINDOW:
                return out
            after = hits[-1]["sort"]

    def facet_catalog(self) -> FacetCatalog:
        """Distinct doc types and tags (terms aggregations, at most 1,000 each) and the date
        span (min/max) of the searchable chunks."""
        aggs = {
            "doc_types": {"terms": {"field": m.DOC_TYPE, "size": 1000}},
            "tags": {"terms": {"field": m.TAGS, "size": 1000}},
            "languages": {"terms": {"field": m.LANGUAGE, "size": 100}},
            "date_min": {"min": {"field": m.DATE, "format": "strict_date"}},
            "date_max": {"max": {"field": m.DATE, "format": "strict_date"}},
        }
        with es_errors(self.url, f"read the facet catalog of index {self.index!r}"):
            resp = self._client.search(index=self.index, size=0, query={"term": {"is_parent": False}}, aggs=aggs)
        got = resp["aggregations"]

        def day(name: str) -> str | None:
            return got[name].get("value_as_string") if got[name].get("value") is not None else None

        return FacetCatalog(frozenset(str(b["key"]) for b in got["doc_types"]["buckets"]),
                            frozenset(str(b["key"]) for b in got["tags"]["buckets"]), day("date_min"), day("date_max"),
                            frozenset(str(b["key"]) for b in got["languages"]["buckets"]))

    def prepare_reads(self) -> None:
        """Nothing to load: the server holds the index."""

    def count(self, searchable_only: bool = False) -> int:
        query = {"term": {"is_parent": False}} if searchable_only else {"match_all": {}}
        with es_errors(self.url, f"count chunks in index {self.index!r}"):
            return int(self._client.count(index=self.index, query=query)["count"])

    def iter_chunks(self, batch_size: int = 500) -> Iterator[tuple[Chunk, np.ndarray | None]]:
        """Pages with ``search_after`` on (doc_id, ordinal, chunk_id): a document's chunks come
        together, in order. Writes during the iteration may or may not be seen."""
        if batch_size <= 0:
            raise StoreError(f"batch_size must be positive, got {batch_size}")
        size = min(batch_size, m.MAX_WINDOW)
        after: list[Any] | None = None
        while True:
            with es_errors(self.url, f"iterate chunks of index {self.index!r}"):
                resp = self._client.search(
                    index=self.index,
                    size=size,
                    sort=[{"doc_id": "asc"}, {"ordinal": "asc"}, {"chunk_id": "asc"}],
                    search_after=after,
                    source_excludes=m.SEARCH_ONLY_FIELDS,
                    track_total_hits=False,
                )
            hits = resp["hits"]["hits"]
            for hit in hits:
                src = hit["_source"]
                vec = src.get(m.VECTOR_FIELD)
                yield m.chunk_from_source(src), None if vec is None else np.asarray(vec, dtype=np.float32)
            if len(hits) < size:
                return
            after = hits[-1]["sort"]

    # -- search ----------------------------------------------------------------------------
    def search_bm25(self, query: str, k: int, filters: SearchFilter | None = None) -> list[ScoredId]:
        clauses = m.filter_clauses(filters)
        terms = list(dict.fromkeys(analyze(query)))
        if k <= 0 or not terms:
            return []
        with es_errors(self.url, f"BM25 search in index {self.index!r}"):
            resp = self._client.search(
                index=self.index,
                query=m.bm25_query(terms, self.heading_weight, clauses),
                size=min(k, m.MAX_WINDOW),
                source=False,
                track_total_hits=False,
            )
        return [ScoredId(h["_id"], float(h["_score"])) for h in resp["hits"]["hits"]]

    def holds_dense_columns(self, *ranges: tuple[int, int]) -> bool:
        """Not known without a scan: every space is searched."""
        return True

    def search_dense(
        self, vector: np.ndarray, k: int, filters: SearchFilter | None = None
    ) -> list[ScoredId]:
        clauses = m.filter_clauses(filters)
        if not self._knn:
            raise StoreError(f"index {self.index!r} was created with knn=False: it has no dense search")
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self._dim is None:
            self._dim = self._stored_dim()  # vectors written by another process since opening
        if k <= 0 or self._dim is None:
            return []
        if query.shape[0] != self._dim:
            raise StoreError(
                f"Elasticsearch index {self.index!r}: query vector has dim {query.shape[0]}, "
                f"the index holds {self._dim}-dim vectors"
            )
        if not np.isfinite(query).all() or not query.any():
            raise StoreError("query vector must be finite and non-zero (cosine similarity)")
        k = min(k, m.MAX_WINDOW)
        knn = {
            "field": m.VECTOR_FIELD,
            "query_vector": query.tolist(),
            "k": k,
            # Candidates per shard: more than k keeps HNSW recall high on small k.
            "num_candidates": min(max(2 * k, 100), m.MAX_WINDOW),
            "filter": clauses,
        }
        with es_errors(self.url, f"kNN search in index {self.index!r}"):
            resp = self._client.search(index=self.index, knn=knn, size=k, source=False)
        return [ScoredId(h["_id"], 2.0 * float(h["_score"]) - 1.0) for h in resp["hits"]["hits"]]

    def problems(self) -> list[str]:
        """[] when the index answers a count, else why not."""
        try:
            self.count()
        except StoreError as exc:
            return [str(exc)]
        return []

    def close(self) -> None:
        if self._owns_client:
            self._client.close()
