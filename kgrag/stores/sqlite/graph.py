"""Embedded GraphStore: SQLite tables mirroring the Neo4j model, an in-memory graph for traversal.

documents / chunks / entities / aliases / mentions / relation_evidence. Relations are kept per
evidencing chunk so deleting a document removes exactly the evidence it gave; an edge's weight
is the sum of its evidence. CO_OCCURS is undirected and stored with source_key < target_key so
(a, b) and (b, a) land on one edge; other relation types keep their direction. Traversal ignores
direction (as an undirected Cypher pattern does).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from kgrag.errors import StoreError
from kgrag.stores.base import DocumentContent
from kgrag.stores.graph_rules import PREVIEW_CHARS, check_chunks, mention_rows, relation_rows
from kgrag.stores.graph_walk import best_paths
from kgrag.stores.sqlite.aliases import SqliteAliasAdmin, SqliteAuditLog
from kgrag.stores.sqlite.compact_graph import CompactGraph
from kgrag.stores.sqlite.db import GRAPH_STORE_APP_ID, IN_JSON, SqliteDatabase, id_list, to_json
from kgrag.stores.sqlite.graph_cache import CHANGE_LOG, EntityGraphCache
from kgrag.stores.sqlite.graph_reads import group_pairs, load_entities
from kgrag.stores.sqlite.graph_writes import (
    SCHEMA,
    SCHEMA_ADDITIONS,
    SCHEMA_VERSION,
    check_entities_exist,
    merge_entities,
    remove_document_content,
    remove_orphans,
)
from kgrag.text.normalize import normalize_alias
from kgrag.types import Chunk, Document, Entity, GraphPath, Mention, Relation

# Entities whose first mentions are kept between walks; then the kept rows start over. A walk
# reaches ~200–600 entities; 5,000 lists of ≤ 50 rows stay under ~40 MB.
KEPT_TOP_MENTIONS = 5000
# Alias lookups kept between questions (``lookup_aliases``); then they start over. Section
# titles and question n-grams: 50,000 short strings with their few keys, ~10 MB.
KEPT_ALIASES = 50_000


class SqliteGraphStore:
    """GraphStore in one SQLite file; safe to share between threads. The alias-admin and
    audit roles are objects of their own on the same database (``alias_admin``, ``audit``)."""

    def __init__(self, path: Path | str):
        self._db = SqliteDatabase(
            path, app_id=GRAPH_STORE_APP_ID, schema_version=SCHEMA_VERSION, schema=SCHEMA,
            additions=SCHEMA_ADDITIONS,
        )
        self.path = self._db.path
        self.alias_admin = SqliteAliasAdmin(self._db)
        self.audit = SqliteAuditLog(self._db)
        with self._db.write("add the relation change log") as conn:
            for statement in CHANGE_LOG:
                conn.execute(statement)
        # Saved beside the database after each full build; a restarted server loads it and
        # applies the changes since, instead of re-reading every relation (docs/decisions.md,
        # "The graph held as arrays, caught up from a change log, saved as a snapshot").
        self._graph_cache = EntityGraphCache(Path(self.path + ".walk.npz") if self.path != ":memory:" else None)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``kgrag.stores.base.Transactional``: every write of this thread inside the block
        commits together or not at all. Other threads' reads of this store wait meanwhile (one
        connection): keep the block to the writes."""
        with self._db.write("one transaction"):
            yield

    # -- documents -------------------------------------------------------------------------
    def get_document(self, doc_id: str) -> Document | None:
        docs = self._documents("WHERE id = ?", (doc_id,))
        return docs[0] if docs else None

    def list_documents(self) -> list[Document]:
        return self._documents("ORDER BY id", ())

    def _documents(self, clause: str, params: tuple) -> list[Document]:
        with self._db.read("read documents") as conn:
            rows = conn.execute(
                f"SELECT id, source, title, hash, format, metadata FROM documents {clause}", params
            ).fetchall()
        return [
            Document(id=i, source=s, title=t, hash=h, format=f, metadata=json.loads(m))
            for i, s, t, h, f, m in rows
        ]

    def document_hashes(self) -> dict[str, str]:
        with self._db.read("read document hashes") as conn:
            return dict(conn.execute("SELECT id, hash FROM documents").fetchall())

    def document_chunk_ids(self) -> dict[str, set[str]]:
        """Every document → its chunk ids; chunks of a document without a record are listed
        under their doc_id too (the index must agree with them as well)."""
        with self._db.read("read document chunks") as conn:
            conn.execute("BEGIN")
            try:
                out: dict[str, set[str]] = {r[0]: set() for r in conn.execute("SELECT id FROM documents")}
                for doc_id, chunk_id in conn.execute("SELECT doc_id, id FROM chunks"):
                    out.setdefault(doc_id, set()).add(chunk_id)
            finally:
                conn.execute("COMMIT")
        return out

    def write_document(
        self,
        doc: Document,
        chunks: Sequence[Chunk],
        entities: Sequence[Entity],
        mentions: Sequence[Mention],
        relations: Sequence[Relation],
    ) -> None:
        what = f"write document {doc.id!r}"
        chunk_ids = check_chunks(what, doc, chunks)
        entity_keys = {e.key for e in entities}
        doc_row = (doc.id, doc.source, doc.title, doc.hash, doc.format, to_json(doc.metadata, what))
        mention_params = mention_rows(what, mentions, chunk_ids)
        relation_params = relation_rows(what, relations, chunk_ids)
        with self._db.write(what) as conn:
            previous_keys = remove_document_content(conn, doc.id)
            taken = conn.execute(
                f"SELECT id, doc_id FROM chunks WHERE id {IN_JSON}", (id_list(chunk_ids),)
            ).fetchone()
            if taken:
                raise StoreError(f"{what}: chunk id {taken[0]!r} already belongs to document {taken[1]!r}")
            merge_entities(conn, entities)
            referenced = {r[0] for r in mention_params} | {k for r in relation_params for k in r[:2]}
            check_entities_exist(conn, what, referenced - entity_keys)
            conn.executemany(
                "INSERT INTO chunks (id, doc_id, section_path, preview, ordinal) VALUES (?, ?, ?, ?, ?)",
                [(c.id, doc.id, c.section_path, c.text[:PREVIEW_CHARS], c.ordinal) for c in chunks],
            )
            # Repeats within one write add up (same mention or relation reported twice).
            conn.executemany(
                "INSERT INTO mentions (entity_key, chunk_id, count) VALUES (?, ?, ?) "
                "ON CONFLICT DO UPDATE SET count = count + excluded.count",
                mention_params,
            )
            conn.executemany(
                "INSERT INTO relation_evidence (source_key, target_key, type, chunk_id, weight) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET weight = weight + excluded.weight",
                relation_params,
            )
            conn.execute(
                "INSERT INTO documents (id, source, title, hash, format, metadata) VALUES (?, ?, ?, ?, ?, ?)",
                doc_row,
            )
            remove_orphans(conn, previous_keys | entity_keys)

    def delete_document(self, doc_id: str) -> bool:
        with self._db.write(f"delete document {doc_id!r}") as conn:
            known = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM documents WHERE id = ?) "
                "OR EXISTS (SELECT 1 FROM chunks WHERE doc_id = ?)",
                (doc_id, doc_id),
            ).fetchone()[0]
            remove_orphans(conn, remove_document_content(conn, doc_id))
        return bool(known)

    # -- entities and aliases --------------------------------------------------------------
    def upsert_entities(self, entities: Sequence[Entity]) -> None:
        with self._db.write("upsert entities") as conn:
            merge_entities(conn, entities)

    def get_entity(self, key: str) -> Entity | None:
        with self._db.read("get entity") as conn:
            return load_entities(conn, [key]).get(key)

    def alias_table(self, types: Collection[str] | None = None) -> dict[str, list[str]]:
        """Kept until the file changes (``SqliteDatabase.kept``), so the same dict comes back
        until a write: the fuzzy linker and the described-entities index re-read it every
        minute, 1–3 s of Python at 100k passages when read afresh. Callers never change it."""
        with self._db.read("read alias table") as conn:
            wanted = None if types is None else tuple(sorted(types))
            return self._db.kept(conn, ("alias table", wanted), lambda: self._alias_rows(conn, types))

    @staticmethod
    def _alias_rows(conn: sqlite3.Connection, types: Collection[str] | None) -> dict[str, list[str]]:
        if types is None:
            rows = conn.execute("SELECT normalized, entity_key FROM aliases ORDER BY normalized, entity_key")
        else:  # CROSS JOIN: from the typed entities out (100k passages: 0.18 s, not 0.86 s
            # scanning all 169k aliases in order and looking each entity up)
            rows = conn.execute(
                "SELECT a.normalized, a.entity_key FROM entities e CROSS JOIN aliases a ON a.entity_key = e.key "
                f"WHERE e.type {IN_JSON} ORDER BY a.normalized, a.entity_key", (id_list(types),))
        return group_pairs(rows)

    def lookup_aliases(self, normalized: Iterable[str]) -> dict[str, list[str]]:
        """Each alias's answer is kept until the file changes (``SqliteDatabase.kept_each``): the
        graph walk looks up the titles of the sections it reads, the same ones question after
        question and round after round (docs/decisions.md, "Query-time reads")."""
        with self._db.read("look up aliases") as conn:
            def read(new: list[str]) -> dict[str, list[str]]:
                return group_pairs(conn.execute(
                    f"SELECT normalized, entity_key FROM aliases WHERE normalized {IN_JSON} "
                    "ORDER BY normalized, entity_key",
                    (id_list(new),),
                ))

            none: list[str] = []
            kept = self._db.kept_each(conn, "aliases", normalized, read, none, KEPT_ALIASES)
            return {alias: list(keys) for alias, keys in sorted(kept.items()) if keys}

    def find_entities(self, query: str, limit: int = 20) -> list[Entity]:
        """Substring match on normalized aliases; exact matches first, then prefixes, then any
        substring; within a rank, entities mentioned more often first."""
        needle = normalize_alias(query)
        if not needle or limit <= 0:
            return []
        with self._db.read("find entities") as conn:
            keys = [
                r[0]
                for r in conn.execute(
                    "SELECT hit.entity_key FROM ("
                    "  SELECT entity_key, min(CASE WHEN normalized = :q THEN 0"
                    "    WHEN substr(normalized, 1, length(:q)) = :q THEN 1 ELSE 2 END) AS rank"
                    "  FROM aliases WHERE instr(normalized, :q) > 0 GROUP BY entity_key) AS hit "
                    "ORDER BY hit.rank, (SELECT coalesce(sum(m.count), 0) FROM mentions m"
                    "  WHERE m.entity_key = hit.entity_key) DESC, hit.entity_key LIMIT :limit",
                    {"q": needle, "limit": limit},
                )
            ]
            found = load_entities(conn, keys)
        return [found[k] for k in keys]

    # -- traversal -------------------------------------------------------------------------
    def mentions_of(self, keys: Sequence[str], per_key: int | None = None) -> dict[str, list[tuple[str, int]]]:
        """Keys with no mention are absent; each list is ordered by count, then chunk id.
        ``per_key`` reads each key's first rows from the ``mentions_top`` index (see
        ``SCHEMA_ADDITIONS`` for the measurement) and keeps them until the file changes, for
        ``KEPT_TOP_MENTIONS`` entities at most: the walk reaches the same hubs question after
        question, round after round."""
        with self._db.read("read mentions") as conn:
            if per_key is None:
                rows = conn.execute(
                    f"SELECT entity_key, chunk_id, count FROM mentions WHERE entity_key {IN_JSON} "
                    "ORDER BY entity_key, count DESC, chunk_id",
                    (id_list(keys),),
                ).fetchall()
            else:
                limit = max(0, int(per_key))

                def first(new: list[str]) -> dict[str, list[tuple[str, int]]]:
                    return {key: conn.execute(
                        "SELECT chunk_id, count FROM mentions WHERE entity_key = ? "
                        "ORDER BY count DESC, chunk_id LIMIT ?", (key, limit)).fetchall() for key in new}

                none: list[tuple[str, int]] = []
                kept = self._db.kept_each(conn, ("top mentions", limit), keys, first, none, KEPT_TOP_MENTIONS)
                return {key: list(found) for key, found in sorted(kept.items()) if found}
        out: dict[str, list[tuple[str, int]]] = {}
        for key, chunk_id, count in rows:
            out.setdefault(key, []).append((chunk_id, count))
        return out

    def entity_chunk_counts(self, keys: Sequence[str]) -> dict[str, int]:
        """Keys with no mention are absent. Each count is kept until the file changes (a write
        through this store or another connection's commit): the walk asks for the same hub
        entities on every question and round, and counting a hub's mentions is an index scan
        of thousands of rows (at 100k passages a fifth of the graph path's time, py-spy)."""
        with self._db.read("count entity chunks") as conn:
            counts = self._db.kept_each(conn, "entity chunk counts", keys, lambda new: dict(conn.execute(
                f"SELECT entity_key, count(*) FROM mentions WHERE entity_key {IN_JSON} GROUP BY entity_key",
                (id_list(new),),
            ).fetchall()), 0)
            return {k: n for k, n in counts.items() if n}

    def chunk_entities(self, chunk_ids: Sequence[str]) -> dict[str, list[str]]:
        """Chunks with no mention are absent; keys ordered by count, then key."""
        with self._db.read("read chunk entities") as conn:
            rows = conn.execute(
                f"SELECT chunk_id, entity_key FROM mentions WHERE chunk_id {IN_JSON} "
                "ORDER BY chunk_id, count DESC, entity_key",
                (id_list(chunk_ids),),
            )
            return group_pairs(rows)

    def neighbors(self, keys: Sequence[str], hops: int, limit: int = 200) -> dict[str, GraphPath]:
        """Unknown start keys are left out. Best path and limit: see ``graph_walk``."""
        if hops < 0:
            raise StoreError(f"neighbors: hops must be >= 0, got {hops}")
        with self._graph_cache.lock:  # the walk reads the graph another thread may update
            with self._db.read("walk the graph") as conn:
                graph = self._entity_graph(conn)
                known = {r[0] for r in conn.execute(
                    f"SELECT key FROM entities WHERE key {IN_JSON}", (id_list(keys),)
                )}
            return best_paths(graph, [k for k in keys if k in known], hops, limit)

    def _entity_graph(self, conn: sqlite3.Connection) -> CompactGraph:
        """Current as of this call: updated by the pairs changed since (``graph_cache``)."""
        version = (self._db.writes, conn.execute("PRAGMA data_version").fetchone()[0])
        return self._graph_cache.current(conn, version)

    def relation_weight(self, a: str, b: str) -> float:
        with self._db.read("read relation weight") as conn:
            return conn.execute(
                "SELECT coalesce(sum(weight), 0.0) FROM relation_evidence "
                "WHERE (source_key = ? AND target_key = ?) OR (source_key = ? AND target_key = ?)",
                (a, b, b, a),
            ).fetchone()[0]

    def relation_evidence(self, a: str, b: str, limit: int = 50) -> list[tuple[str, str, float]]:
        with self._db.read("read relation evidence") as conn:
            rows = conn.execute(
                "SELECT type, chunk_id, sum(weight) AS w FROM relation_evidence "
                "WHERE (source_key = ? AND target_key = ?) OR (source_key = ? AND target_key = ?) "
                "GROUP BY type, chunk_id ORDER BY w DESC, chunk_id, type LIMIT ?",
                (a, b, b, a, limit),
            ).fetchall()
        return [(str(t), str(c), float(w)) for t, c, w in rows]

    # -- export ----------------------------------------------------------------------------
    def export_document(self, doc_id: str) -> DocumentContent | None:
        """One read transaction, so the parts agree even while another process writes."""
        with self._db.read(f"export document {doc_id!r}") as conn:
            conn.execute("BEGIN")
            try:
                docs = [Document(id=i, source=s, title=t, hash=h, format=f, metadata=json.loads(m))
                        for i, s, t, h, f, m in conn.execute(
                            "SELECT id, source, title, hash, format, metadata FROM documents WHERE id = ?", (doc_id,))]
                if not docs:
                    return None
                chunks = [
                    Chunk(id=i, doc_id=doc_id, text=preview, section_path=section, ordinal=ordinal)
                    for i, section, preview, ordinal in conn.execute(
                        "SELECT id, section_path, preview, ordinal FROM chunks WHERE doc_id = ? "
                        "ORDER BY ordinal, id", (doc_id,))
                ]
                mentions = [Mention(k, c, n) for k, c, n in conn.execute(
                    f"SELECT entity_key, chunk_id, count FROM mentions WHERE {_OF_DOC} ORDER BY chunk_id, entity_key",
                    (doc_id,))]
                relations = [Relation(s, t, c, ty, w) for s, t, ty, c, w in conn.execute(
                    "SELECT source_key, target_key, type, chunk_id, weight FROM relation_evidence "
                    f"WHERE {_OF_DOC} ORDER BY chunk_id, source_key, target_key, type", (doc_id,))]
                keys = sorted({m.entity_key for m in mentions} | {k for r in relations for k in (r.source_key, r.target_key)})
                found = load_entities(conn, keys)
            finally:
                conn.execute("COMMIT")
        return DocumentContent(docs[0], chunks, [found[k] for k in keys if k in found], mentions, relations)

    def curated_entities(self) -> list[Entity]:
        with self._db.read("read curated entities") as conn:
            keys = [r[0] for r in conn.execute("SELECT key FROM entities WHERE curated = 1 ORDER BY key")]
            found = load_entities(conn, keys)
        return [found[k] for k in keys]

    # -- bookkeeping -----------------------------------------------------------------------
    def prepare_reads(self, *, this_process: bool = True) -> None:
        """Brings the entity graph up to date; after bulk changes that is a full build, saved
        as the snapshot other processes (a running or restarted server) load instead of
        re-reading every relation. ``this_process=False`` (the ingest job): nothing at all while
        a reader starting from the saved snapshot would catch up from the change log anyway —
        a one-document ingest at 100k passages loaded the 240 MB snapshot and caught it up
        (1.0–1.7 s) only to exit."""
        if not this_process:
            with self._db.read("check the graph snapshot") as conn:
                if self._graph_cache.snapshot_serves(conn):
                    return
        self.neighbors([], hops=1)

    def stats(self, relations: bool = True) -> dict[str, int]:
        """Kept until the file changes: ``/readyz`` asks on every poll. Counting the distinct
        relations is the costly part (2.1 s at 50k passages, 4 s at 100k: 8.5M relations),
        left out with ``relations=False``."""
        with self._db.read("stats") as conn:
            return dict(self._db.kept(conn, ("stats", relations), lambda: self._count_all(conn, relations)))

    @staticmethod
    def _count_all(conn: sqlite3.Connection, relations: bool) -> dict[str, int]:
        tables = ("documents", "chunks", "entities", "aliases", "mentions")
        counts = {table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in tables}
        if relations:
            counts["relations"] = conn.execute(
                "SELECT count(*) FROM (SELECT DISTINCT source_key, target_key, type FROM relation_evidence)"
            ).fetchone()[0]
        return counts

    def problems(self) -> list[str]:
        """See ``SqliteDatabase.problems``."""
        return self._db.problems()

    def check_file(self) -> list[str]:
        """See ``FileCheck``: ``SqliteDatabase.problems`` needs no open connection."""
        return self._db.problems()

    def close(self) -> None:
        self._db.close()
        self._graph_cache.drop()


# -- reads ---------------------------------------------------------------------------------
_OF_DOC = "chunk_id IN (SELECT id FROM chunks WHERE doc_id = ?)"
