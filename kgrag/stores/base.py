"""The storage ports. Every implementation (SQLite, Elasticsearch, Neo4j) passes the same
contract tests in ``tests/contract/``.

ChunkIndex holds chunk text, metadata, dense vectors and BM25 terms. A graph store holds
documents, chunks (as graph nodes), entities, aliases, mentions and relations; its methods
come in roles, each a protocol typed where it is used:

========================  ==============================================  =========================
role                      used by                                         contract suite
========================  ==============================================  =========================
``GraphReader``           retrieval, the entity routes, alias views       test_graph_store_contract
``GraphWriter``           the ingestion job                               test_graph_store_contract
``GraphExport``           ``kgrag transfer``                              test_graph_store_contract
``AliasAdmin``            ``kgrag.aliases`` (mechanics; policy is there)  test_alias_contract
``AuditLog``              ``kgrag.aliases``                               test_alias_contract
========================  ==============================================  =========================

``GraphStore`` is what the factory builds: the first three roles, with the alias-admin and
audit roles as objects of their own (``store.alias_admin``, ``store.audit``); ``AliasGraph``
is what ``kgrag.aliases`` works on (reading, administering, auditing, curating).

Write protocol for one document across both stores (journal, graph commit with the hash last,
then the chunk swap; what makes every failure keep the old version or finish the new one, and a
crash converge on re-run): ``kgrag.stores.consistency``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from kgrag.errors import StoreError
from kgrag.facets import FacetCatalog
from kgrag.stores.filters import SearchFilter
from kgrag.types import Chunk, Document, Entity, GraphPath, Mention, Relation, ScoredId


@runtime_checkable
class ChunkIndex(Protocol):
    @property
    def dim(self) -> int | None:
        """The vector dimension the index holds (None until the first vectors are written)."""

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> None:
        """Insert or replace chunks. ``vectors`` has one L2-normalized row per *searchable* chunk,
        in order (parents carry no vector); None for an index without dense search."""

    def delete_document(self, doc_id: str) -> int:
        """Remove every chunk of a document; returns how many were removed."""

    def replace_document(self, doc_id: str, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> int:
        """Make ``chunks`` the document's only chunks (as upsert); returns how many of its other
        chunks were removed. Idempotent: the write journal's recovery may repeat it."""

    def chunk_ids_by_document(self) -> dict[str, set[str]]:
        """document id → ids of its chunks in the index (the consistency check)."""

    def get(self, ids: Sequence[str]) -> list[Chunk]:
        """Chunks by id, in the order asked; unknown ids are left out."""

    def search_dense(
        self, vector: np.ndarray, k: int, filters: SearchFilter | None = None
    ) -> list[ScoredId]:
        """Searchable chunks by cosine similarity to ``vector`` (normalized), best first, those
        ``filters.matches`` keeps (``kgrag.stores.filters``)."""

    def holds_dense_columns(self, *ranges: tuple[int, int]) -> bool:
        """Whether some stored vector is non-zero in each of the column ranges [start, stop)
        (one vector in all of them). False lets an embedder with several spaces skip one the
        index does not hold, or holds only apart from another (``CorpusEmbedder.query_vectors``:
        an English knowledge base has no e5 block, and embedding each English question with e5
        cost ~140 ms of ~400 per question for nothing). An engine that cannot tell cheaply
        answers True."""

    def search_bm25(
        self, query: str, k: int, filters: SearchFilter | None = None
    ) -> list[ScoredId]:
        """Searchable chunks by BM25 over analyzed text+title+section (``kgrag.text.analyze``),
        those ``filters.matches`` keeps."""

    def document_ids(self) -> set[str]:
        ...

    def prepare_reads(self) -> None:
        """Load what the first search would (the embedded index reads its dense matrix; a
        server engine has nothing to do)."""

    def count(self, searchable_only: bool = False) -> int:
        ...

    def iter_chunks(self, batch_size: int = 500) -> Iterator[tuple[Chunk, np.ndarray | None]]:
        """Every chunk with its vector (None for parents): used by transfer and eval."""

    def facet_catalog(self) -> FacetCatalog:
        """The doc types, tags and date span the searchable chunks carry (``kgrag.facets``)."""

    def close(self) -> None:
        ...


def check_vectors(where: str, vectors: np.ndarray | None, searchable: int) -> np.ndarray | None:
    """The ``vectors`` argument of ``ChunkIndex.upsert`` as a contiguous float32 matrix with one
    finite row per searchable chunk, or a StoreError naming ``where`` (the index)."""
    if vectors is None:
        return None
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != searchable:
        raise StoreError(
            f"{where}: expected one vector row per searchable chunk ({searchable}), "
            f"got an array of shape {matrix.shape}"
        )
    if not np.isfinite(matrix).all():
        raise StoreError(f"{where}: vectors contain NaN or infinite values")
    return np.ascontiguousarray(matrix)



class DocumentContent(NamedTuple):
    """Everything a graph store holds for one document, in the form ``write_document`` takes:
    writing it into another store reproduces the document there (used by ``kgrag transfer``).
    Chunks carry the graph's preview as their text; mentions carry no surface form."""

    document: Document
    chunks: list[Chunk]
    entities: list[Entity]
    mentions: list[Mention]
    relations: list[Relation]


@dataclass
class AuditEntry:
    """One change made by the alias admin: who (user, API key label), when (ISO 8601 UTC), what
    (action, the entity it targeted, details such as the aliases added)."""

    at: str
    who: str
    action: str
    target: str
    details: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class GraphReader(Protocol):
    """What answering reads: entities, aliases, mentions and the entity graph."""

    def get_entity(self, key: str) -> Entity | None:
        ...

    def alias_table(self, types: Collection[str] | None = None) -> dict[str, list[str]]:
        """normalized alias → entity keys claiming it (more than one = ambiguous). Includes each
        entity's own normalized name. ``types``: only entities of these types (the described
        entities' index reads the term extractor's ~13k of a 100k passage graph's 170k aliases).
        Read-only for callers: a store may hand the same dict out until its data changes."""

    def lookup_aliases(self, normalized: Iterable[str]) -> dict[str, list[str]]:
        """Like ``alias_table`` restricted to the given normalized aliases."""

    def find_entities(self, query: str, limit: int = 20) -> list[Entity]:
        """Entities whose name or an alias contains the (normalized) query, best first."""

    def mentions_of(self, keys: Sequence[str], per_key: int | None = None) -> dict[str, list[tuple[str, int]]]:
        """entity key → [(chunk id, count)] of the chunks that mention it, by count then chunk
        id; with ``per_key``, only that many of each key's first (the graph path reads 50 per
        reached entity: a hub's thousands of mentions are not carried into Python)."""

    def entity_chunk_counts(self, keys: Sequence[str]) -> dict[str, int]:
        """entity key → number of chunks mentioning it (specificity: fewer is more specific)."""

    def neighbors(
        self, keys: Sequence[str], hops: int, limit: int = 200
    ) -> dict[str, GraphPath]:
        """Entities reachable from ``keys`` within ``hops`` RELATED edges → the best path
        (fewest hops, then highest edge weight). Start keys map to zero-hop paths."""

    def relation_weight(self, a: str, b: str) -> float:
        """Summed weight of the relations between a and b (either direction), 0 when none."""

    def relation_evidence(self, a: str, b: str, limit: int = 50) -> list[tuple[str, str, float]]:
        """(relation type, evidencing chunk id, weight) of the relations between a and b (either
        direction), heaviest first: what the graph explorer shows for an edge."""

    def chunk_entities(self, chunk_ids: Sequence[str]) -> dict[str, list[str]]:
        """chunk id → entity keys mentioned in it."""


@runtime_checkable
class GraphWriter(Protocol):
    """What the ingestion job writes: documents with their content, glossary entities, and
    the counts it reports."""

    def get_document(self, doc_id: str) -> Document | None:
        """The stored document (id, source, title, hash, format, metadata; no text)."""

    def list_documents(self) -> list[Document]:
        ...

    def document_hashes(self) -> dict[str, str]:
        """document id → recorded hash (the write journal's commit test)."""

    def document_chunk_ids(self) -> dict[str, set[str]]:
        """document id → ids of its chunks in the graph (an empty set for a document without
        chunks); chunks whose document is missing are listed under their doc_id."""

    def write_document(
        self,
        doc: Document,
        chunks: Sequence[Chunk],
        entities: Sequence[Entity],
        mentions: Sequence[Mention],
        relations: Sequence[Relation],
    ) -> None:
        """Atomically replace everything of ``doc.id`` with the given content.

        Entities are merged by key: new aliases are added (no duplicates by normalized form),
        an existing entity's name/type are kept. Mentions and relations reference chunk ids of
        this document; relation weights accumulate per (source, target, type) across chunks.
        Entities left without any mention and not curated are removed (as in delete_document).
        """

    def delete_document(self, doc_id: str) -> bool:
        """Remove the document, its chunks, its mentions, the relation evidence only it gave, and
        non-curated entities left with no mention. False when the document was unknown."""

    def upsert_entities(self, entities: Sequence[Entity]) -> None:
        """Create or merge entities (aliases added, no duplicates); marks them curated when the
        given entity is curated. Used by glossaries and the alias admin."""

    def stats(self, relations: bool = True) -> dict[str, int]:
        """Counts: documents, chunks, entities, aliases, mentions, relations (distinct edges).
        ``relations=False`` may leave the last out: the costly one (4 s of SQLite at 8.5M
        relations), which ``/readyz`` does not show."""

    def prepare_reads(self, *, this_process: bool = True) -> None:
        """Bring read-side caches up to date, so that no reader pays for it on its first
        question (the embedded store builds its entity graph and saves the snapshot a server
        loads; a server engine has nothing to do). ``this_process=False`` (a writer that will
        not read, after its batch): only what readers elsewhere need."""


@runtime_checkable
class GraphExport(Protocol):
    """What ``kgrag transfer`` reads to copy a graph into another store."""

    def export_document(self, doc_id: str) -> DocumentContent | None:
        """The document with its chunks, mentions, relation evidence (one per evidencing chunk,
        with its weight) and every entity these reference (all aliases, curated flag); None
        when the document is unknown."""

    def curated_entities(self) -> list[Entity]:
        """Every curated entity with its aliases (glossary entries survive without mentions, so
        no document export carries them)."""


@runtime_checkable
class AliasAdmin(Protocol):
    """Alias administration, mechanics only (policy lives in ``kgrag.aliases``)."""

    def list_entities(self, limit: int | None = None, offset: int = 0) -> list[Entity]:
        """Entities with every alias, ordered by key; ``limit`` None: all of them."""

    def add_aliases(self, key: str, aliases: Sequence[str]) -> list[str]:
        """Add surface forms to an existing entity; returns those added (a form whose normalized
        alias the entity already has is skipped). StoreError when the entity is unknown."""

    def remove_aliases(self, key: str, aliases: Sequence[str]) -> list[str]:
        """Remove aliases, matched by normalized form; returns the stored surfaces removed. The
        entity's own name cannot be removed (StoreError): the key is its normalized name."""

    def rename_entity(self, key: str, new_name: str) -> Entity:
        """Give an entity a new canonical name. Its key becomes ``normalize_alias(new_name)``;
        aliases, mentions, relations and merge provenance move with it and the old name stays
        an alias. StoreError when the new key belongs to another entity (merge instead)."""

    def merge_entities(self, keep: str, drop: Sequence[str]) -> Entity:
        """Fold ``drop`` entities into ``keep``: aliases added without normalized duplicates,
        mention counts and relation weights summed per chunk, relations between merged
        entities dropped, curated kept if any was. Each dropped entity's own mentions and
        relations are recorded (provenance) so ``split_entity`` can undo the merge exactly.
        Returns the kept entity."""

    def split_entity(self, key: str, aliases: Sequence[str], new_name: str) -> Entity:
        """Move ``aliases`` (and ``new_name`` when it is one) of ``key`` to a new curated entity
        keyed ``normalize_alias(new_name)``. Mentions and relations recorded when an entity of
        that name (or of one of the aliases) was merged into ``key`` move back to it, as far as
        the chunks still exist. StoreError when the new key exists or an alias is not
        ``key``'s (or is its name)."""

    def delete_entity(self, key: str) -> bool:
        """Remove an entity with its aliases, mentions, relations and provenance; False when
        unknown."""

    def add_mentions(self, mentions: Sequence[Mention], relations: Sequence[Relation]) -> int:
        """Link existing entities to chunks already stored (a newly added alias found in them):
        a mention's count becomes at least the given count and a relation's evidence from that
        chunk at least the given weight, so repeating a call changes nothing. Mentions and
        relations of chunks the graph does not hold are skipped; unknown entities raise
        StoreError. Returns how many mentions were written or raised."""


@runtime_checkable
class AuditLog(Protocol):
    """The audit log kept in the graph store."""

    def record_audit(self, entry: AuditEntry) -> None:
        """Append one entry to the audit log kept in the graph store."""

    def audit_log(self, limit: int = 100) -> list[AuditEntry]:
        """The newest ``limit`` audit entries, newest first."""


@runtime_checkable
class Transactional(Protocol):
    """A store that can make several writes one transaction (the embedded graph store). Callers
    check for it (``isinstance``): a store without it writes each call on its own."""

    def transaction(self) -> AbstractContextManager[None]:
        """Every write of this thread inside the block commits together, or none does."""


@runtime_checkable
class GraphStore(GraphReader, GraphWriter, GraphExport, Protocol):
    """What ``kgrag.stores.factory`` builds: the graph roles retrieval, ingestion and transfer
    use, plus the store's alias-admin and audit role objects (``kgrag.aliases`` works on those;
    nothing else needs their methods)."""

    @property
    def alias_admin(self) -> AliasAdmin: ...

    @property
    def audit(self) -> AuditLog: ...

    def close(self) -> None:
        ...


@runtime_checkable
class AliasGraph(GraphReader, Protocol):
    """What ``kgrag.aliases`` works on: it reads the graph, administers aliases (``alias_admin``),
    keeps the audit log (``audit``), and adds or lists curated entities (glossaries)."""

    @property
    def alias_admin(self) -> AliasAdmin: ...

    @property
    def audit(self) -> AuditLog: ...

    def upsert_entities(self, entities: Sequence[Entity]) -> None:
        """As ``GraphWriter.upsert_entities``."""

    def curated_entities(self) -> list[Entity]:
        """As ``GraphExport.curated_entities``."""
