"""GraphStore on Neo4j 5 (or a Bolt server compatible with it, e.g. ArcadeDB) through the
official driver.

Graph model (the embedded store mirrors it in tables):
``(:Document)-[:HAS_CHUNK]->(:Chunk)``, ``(:Entity)-[:MENTIONED_IN {count}]->(:Chunk)``,
``(:Entity)-[:RELATED {type, weight, chunk_id}]->(:Entity)`` with one RELATED edge per
evidencing chunk (an edge's weight is the sum of its evidence; deleting a document removes
exactly the evidence it gave), and ``(:Alias {key})-[:NAMES]->(:Entity)`` for each normalized
alias so alias lookups use an index. Entities also keep their alias surface forms as a list.
CO_OCCURS is undirected and stored with source key < target key; traversal ignores direction.
Every node has a ``name`` (Neo4j Browser's caption). Statements: ``cypher/*.cypher``.
"""

from __future__ import annotations

from collections.abc import Collection, Container, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from kgrag.errors import StoreError
from kgrag.stores.base import DocumentContent
from kgrag.stores.graph_walk import Reached, walk_levels
from kgrag.stores.neo4j.aliases import Neo4jAliasAdmin, Neo4jAuditLog
from kgrag.stores.neo4j.driver import CypherRunner
from kgrag.stores.neo4j.records import document_of, entity_of, grouped
from kgrag.stores.neo4j.writes import (
    DocumentWrite,
    batches,
    entity_rows,
    merge_entities,
    remove_document_content,
    remove_orphans,
)
from kgrag.text.normalize import normalize_alias
from kgrag.types import Chunk, Document, Entity, GraphPath, Mention, Relation

if TYPE_CHECKING:
    from kgrag.config import Neo4jSettings


class Neo4jGraphStore:
    """GraphStore over Bolt; safe to share between threads (the driver pools sessions). The
    alias-admin and audit roles are objects of their own on the same runner (``alias_admin``,
    ``audit``)."""

    def __init__(self, settings: Neo4jSettings, *, dialect: str | None = None, ensure_schema: bool = True):
        """``dialect`` None: detected from the server (ArcadeDB reads cypher/arcadedb/ overrides)."""
        self._run = CypherRunner(settings, dialect)
        self.dialect = self._run.dialect
        self.alias_admin = Neo4jAliasAdmin(self._run)
        self.audit = Neo4jAuditLog(self._run)
        if ensure_schema:
            try:
                self._run.run_script("schema")
                self._run.run_script("schema_fulltext")
            except BaseException:
                self._run.close()
                raise

    @property
    def server_agent(self) -> str:
        return self._run.agent

    # -- documents -------------------------------------------------------------------------
    def get_document(self, doc_id: str) -> Document | None:
        rows = self._run.read("get document", lambda tx: self._run.rows(tx, "document_get", doc_id=doc_id))
        return document_of(rows[0]) if rows else None

    def list_documents(self) -> list[Document]:
        rows = self._run.read("list documents", lambda tx: self._run.rows(tx, "document_list"))
        return [document_of(r) for r in rows]

    def document_hashes(self) -> dict[str, str]:
        rows = self._run.read("read document hashes", lambda tx: self._run.rows(tx, "document_hashes"))
        return {r["id"]: r["hash"] for r in rows}

    def document_chunk_ids(self) -> dict[str, set[str]]:
        """Every document → its chunk ids; chunks of a document without a node are listed under
        their doc_id too (the index must agree with them as well)."""

        def work(tx) -> dict[str, set[str]]:
            out: dict[str, set[str]] = {r["id"]: set() for r in self._run.rows(tx, "document_hashes")}
            for r in self._run.rows(tx, "document_chunk_map"):
                out.setdefault(r["doc_id"], set()).update(r["chunk_ids"] or [])
            return out

        return self._run.read("read document chunks", work)

    def write_document(
        self,
        doc: Document,
        chunks: Sequence[Chunk],
        entities: Sequence[Entity],
        mentions: Sequence[Mention],
        relations: Sequence[Relation],
    ) -> None:
        write = DocumentWrite(doc, chunks, entities, mentions, relations)
        self._run.write(write.what, lambda tx: write.run(self._run, tx))

    def delete_document(self, doc_id: str) -> bool:
        def work(tx) -> bool:
            known = self._run.rows(tx, "document_exists", doc_id=doc_id)[0]["known"]
            remove_orphans(self._run, tx, remove_document_content(self._run, tx, doc_id))
            return bool(known)

        return self._run.write(f"delete document {doc_id!r}", work)

    # -- entities and aliases --------------------------------------------------------------
    def upsert_entities(self, entities: Sequence[Entity]) -> None:
        rows = entity_rows(entities)
        self._run.write("upsert entities", lambda tx: merge_entities(self._run, tx, rows))

    def get_entity(self, key: str) -> Entity | None:
        return self._entities([key]).get(key)

    def _entities(self, keys: Sequence[str]) -> dict[str, Entity]:
        def work(tx) -> dict[str, Entity]:
            found: dict[str, Entity] = {}
            for batch in batches(list(keys)):
                for r in self._run.rows(tx, "entities_get", keys=list(batch)):
                    found[r["key"]] = entity_of(r)
            return found

        return self._run.read("get entities", work)

    def alias_table(self, types: Collection[str] | None = None) -> dict[str, list[str]]:
        if types is None:
            rows = self._run.read("read alias table", lambda tx: self._run.rows(tx, "alias_table"))
        else:
            wanted = sorted(set(types))
            rows = self._run.read("read alias table",
                                  lambda tx: self._run.rows(tx, "alias_table_of_types", types=wanted))
        return grouped(rows, "alias", "key")

    def lookup_aliases(self, normalized: Iterable[str]) -> dict[str, list[str]]:
        aliases = sorted(set(normalized))
        rows = self._run.read("look up aliases", lambda tx: self._run.rows(tx, "aliases_lookup", aliases=aliases))
        return grouped(rows, "alias", "key")

    def find_entities(self, query: str, limit: int = 20) -> list[Entity]:
        """Substring match on normalized aliases; exact matches first, then prefixes, then any
        substring; within a rank, entities mentioned more often first."""
        needle = normalize_alias(query)
        if not needle or limit <= 0:
            return []
        rows = self._run.read(
            "find entities", lambda tx: self._run.rows(tx, "entities_find", query=needle, limit=int(limit)))
        keys = [r["key"] for r in rows]
        found = self._entities(keys)
        return [found[k] for k in keys if k in found]

    # -- traversal -------------------------------------------------------------------------
    def mentions_of(self, keys: Sequence[str], per_key: int | None = None) -> dict[str, list[tuple[str, int]]]:
        """Keys with no mention are absent; each list is ordered by count, then chunk id.
        ``per_key`` is cut in the server (cypher/mentions_top.cypher)."""
        if per_key is not None:
            if per_key <= 0:
                return {}
            tops = self._run.read("read mentions", lambda tx: self._run.rows(
                tx, "mentions_top", keys=list(keys), per_key=int(per_key)))
            return {r["key"]: [(chunk_id, int(count)) for chunk_id, count in r["top"]] for r in sorted(
                tops, key=lambda r: r["key"]) if r["top"]}
        rows = self._run.read("read mentions", lambda tx: self._run.rows(tx, "mentions_of", keys=list(keys)))
        out: dict[str, list[tuple[str, int]]] = {}
        for r in rows:
            out.setdefault(r["key"], []).append((r["chunk_id"], int(r["count"])))
        return out

    def entity_chunk_counts(self, keys: Sequence[str]) -> dict[str, int]:
        rows = self._run.read(
            "count entity chunks", lambda tx: self._run.rows(tx, "entity_chunk_counts", keys=list(keys)))
        return {r["key"]: int(r["chunks"]) for r in rows}

    def chunk_entities(self, chunk_ids: Sequence[str]) -> dict[str, list[str]]:
        rows = self._run.read(
            "read chunk entities", lambda tx: self._run.rows(tx, "chunk_entities", chunk_ids=list(chunk_ids)))
        return grouped(rows, "chunk_id", "key")

    def neighbors(self, keys: Sequence[str], hops: int, limit: int = 200) -> dict[str, GraphPath]:
        """Breadth-first over RELATED edges, one level per statement (each picks that level's
        entities in the server) inside one read transaction; best paths and limit exactly as
        the embedded store (``graph_walk``)."""
        if hops < 0:
            raise StoreError(f"neighbors: hops must be >= 0, got {hops}")

        def work(tx) -> dict[str, GraphPath]:
            known = {r["key"] for r in self._run.rows(tx, "entities_known", keys=list(dict.fromkeys(keys)))}

            def select(frontier: Mapping[str, float], reached: Container[str], room: int) -> list[Reached]:
                rows = self._run.rows(
                    tx, "neighbor_level", frontier=[{"key": k, "score": s} for k, s in sorted(frontier.items())],
                    reached=list(reached), room=room)
                return [(r["key"], r["score"], r["via"], (r["weight"], r["type"])) for r in rows]

            return walk_levels(select, [k for k in keys if k in known], hops, limit)

        return self._run.read("walk the graph", work)

    def relation_weight(self, a: str, b: str) -> float:
        rows = self._run.read("read relation weight", lambda tx: self._run.rows(tx, "relation_weight", a=a, b=b))
        return float(rows[0]["weight"]) if rows else 0.0

    def relation_evidence(self, a: str, b: str, limit: int = 50) -> list[tuple[str, str, float]]:
        rows = self._run.read("read relation evidence",
                              lambda tx: self._run.rows(tx, "relation_evidence", a=a, b=b, limit=limit))
        return [(str(r["type"]), str(r["chunk_id"]), float(r["weight"])) for r in rows]

    # -- export ----------------------------------------------------------------------------
    def export_document(self, doc_id: str) -> DocumentContent | None:
        def work(tx) -> DocumentContent | None:
            docs = self._run.rows(tx, "document_get", doc_id=doc_id)
            if not docs:
                return None
            chunks = [Chunk(id=r["id"], doc_id=doc_id, text=r["preview"] or "", section_path=r["section_path"] or "",
                            ordinal=int(r["ordinal"] or 0))
                      for r in self._run.rows(tx, "document_chunks", doc_id=doc_id)]
            mentions = [Mention(r["key"], r["chunk_id"], int(r["count"]))
                        for r in self._run.rows(tx, "document_mentions", doc_id=doc_id)]
            relations = []
            for batch in batches([c.id for c in chunks]):
                relations += [Relation(r["source"], r["target"], r["chunk_id"], r["type"], float(r["weight"]))
                              for r in self._run.rows(tx, "relations_by_chunk", chunk_ids=list(batch))]
            keys = sorted({m.entity_key for m in mentions} | {k for r in relations for k in (r.source_key, r.target_key)})
            entities = {}
            for batch in batches(keys):
                entities.update({r["key"]: entity_of(r) for r in self._run.rows(tx, "entities_get", keys=list(batch))})
            return DocumentContent(document_of(docs[0]), chunks, [entities[k] for k in keys if k in entities],
                                   mentions, relations)

        return self._run.read(f"export document {doc_id!r}", work)

    def curated_entities(self) -> list[Entity]:
        rows = self._run.read("read curated entities", lambda tx: self._run.rows(tx, "entities_curated"))
        return [entity_of(r) for r in rows]

    # -- bookkeeping -----------------------------------------------------------------------
    def prepare_reads(self, *, this_process: bool = True) -> None:
        """Nothing to prepare: the server walks its own graph."""

    def stats(self, relations: bool = True) -> dict[str, int]:
        """One query counts all (``relations`` is ignored)."""
        row = self._run.read("stats", lambda tx: self._run.rows(tx, "stats"))[0]
        return {name: int(row[name]) for name in ("documents", "chunks", "entities", "aliases", "mentions", "relations")}

    def problems(self) -> list[str]:
        """[] when the server answers a read, else why not."""
        try:
            self._run.read("ping", lambda tx: self._run.rows(tx, "ping"))
        except StoreError as exc:
            return [str(exc)]
        return []

    def close(self) -> None:
        self._run.close()
