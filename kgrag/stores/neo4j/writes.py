"""Write steps of the Neo4j graph store (``neo4j.graph``): row building before a transaction,
then statements run inside one. Semantics match the embedded store (``sqlite.graph_writes``);
validation is the engine-free ``kgrag.stores.graph_rules``, so both refuse the same input with
the same words."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import neo4j

from kgrag.errors import StoreError
from kgrag.stores.graph_rules import PREVIEW_CHARS, check_chunks, check_entity_keys, mention_rows, relation_rows
from kgrag.stores.neo4j.driver import CypherRunner
from kgrag.text.normalize import normalize_alias
from kgrag.types import Chunk, Document, Entity, Mention, Relation

# Rows per UNWIND statement: big enough to amortize a round trip, small enough to keep one
# statement's memory bounded on the server.
BATCH = 1000


def batches(rows: Sequence[Any], size: int = BATCH) -> Iterable[Sequence[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start:start + size]


# -- rows (validated before any transaction opens) -------------------------------------------
def entity_rows(entities: Sequence[Entity]) -> list[dict[str, Any]]:
    """One row per key: repeats of a key are folded here (first name and type win, aliases
    add up, curated if any is), so no statement sees a key twice. Within one statement Neo4j
    may read every row before writing any (an Eager plan), which would let one repeat's
    aliases overwrite another's."""
    check_entity_keys(entities)
    rows: dict[str, dict[str, Any]] = {}
    for e in entities:
        aliases = [
            {"surface": surface, "normalized": normalized}
            for surface in (e.name, *e.aliases)
            if (normalized := normalize_alias(surface))
        ]
        row = rows.get(e.key)
        if row is None:
            rows[e.key] = {"key": e.key, "name": e.name, "type": e.type, "curated": bool(e.curated), "aliases": aliases}
        else:
            row["aliases"] += aliases
            row["curated"] = row["curated"] or bool(e.curated)
    return list(rows.values())


def document_row(what: str, doc: Document) -> dict[str, Any]:
    try:
        metadata = json.dumps(doc.metadata, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what}: metadata is not JSON-serializable: {exc}") from exc
    return {"id": doc.id, "name": doc.title or doc.id, "source": doc.source, "title": doc.title,
            "hash": doc.hash, "format": doc.format, "metadata": metadata}


def chunk_rows(chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
    return [{"id": c.id, "name": c.id, "section_path": c.section_path, "preview": c.text[:PREVIEW_CHARS],
             "ordinal": c.ordinal} for c in chunks]


class DocumentWrite:
    """Everything one ``write_document`` stores, checked and shaped before the transaction."""

    def __init__(self, doc: Document, chunks: Sequence[Chunk], entities: Sequence[Entity],
                 mentions: Sequence[Mention], relations: Sequence[Relation]):
        self.what = f"write document {doc.id!r}"
        chunk_ids = check_chunks(self.what, doc, chunks)
        self.doc_id = doc.id
        self.doc = document_row(self.what, doc)
        self.chunk_ids = sorted(chunk_ids)
        self.chunks = chunk_rows(chunks)
        self.entities = entity_rows(entities)
        self.entity_keys = {e.key for e in entities}
        # Repeats within one write add up (same mention or relation reported twice).
        counts: dict[tuple[str, str], int] = {}
        for key, chunk_id, count in mention_rows(self.what, mentions, chunk_ids):
            counts[(key, chunk_id)] = counts.get((key, chunk_id), 0) + count
        self.mentions = [{"key": k, "chunk_id": c, "count": n} for (k, c), n in counts.items()]
        weights: dict[tuple[str, str, str, str], float] = {}
        for source, target, rel_type, chunk_id, weight in relation_rows(self.what, relations, chunk_ids):
            edge = (source, target, rel_type, chunk_id)
            weights[edge] = weights.get(edge, 0.0) + weight
        self.relations = [{"source": s, "target": t, "type": ty, "chunk_id": c, "weight": w}
                          for (s, t, ty, c), w in weights.items()]
        self.referenced = {m["key"] for m in self.mentions} | {
            k for r in self.relations for k in (r["source"], r["target"])}

    def run(self, runner: CypherRunner, tx: neo4j.ManagedTransaction) -> None:
        previous_keys = remove_document_content(runner, tx, self.doc_id)
        for batch in batches(self.chunk_ids):
            taken = runner.rows(tx, "chunks_owner", chunk_ids=list(batch))
            if taken:
                raise StoreError(f"{self.what}: chunk id {taken[0]['id']!r} already belongs to "
                                 f"document {taken[0]['doc_id']!r}")
        merge_entities(runner, tx, self.entities)
        missing = sorted(self.referenced - self.entity_keys)
        if missing:
            unknown = [r["key"] for r in runner.rows(tx, "entities_missing", keys=missing)]
            if unknown:
                raise StoreError(f"{self.what}: mentions or relations reference unknown entity key(s) {sorted(unknown)[:5]}")
        runner.rows(tx, "document_create", doc=self.doc)
        for batch in batches(self.chunks):
            runner.rows(tx, "chunks_merge", doc_id=self.doc_id, rows=list(batch))
        for batch in batches(self.mentions):
            runner.rows(tx, "mentions_merge", rows=list(batch))
        for batch in batches(self.relations):
            runner.rows(tx, "relations_merge", rows=list(batch))
        remove_orphans(runner, tx, previous_keys | self.entity_keys)


# -- steps (inside a transaction) ------------------------------------------------------------
def merge_entities(runner: CypherRunner, tx: neo4j.ManagedTransaction, rows: Sequence[dict[str, Any]]) -> None:
    for batch in batches(rows):
        runner.rows(tx, "entities_merge", rows=list(batch))


def remove_document_content(runner: CypherRunner, tx: neo4j.ManagedTransaction, doc_id: str) -> set[str]:
    """Delete a document and everything it evidenced; returns the entity keys it mentioned
    (candidates for orphan removal)."""
    mentioned = {r["key"] for r in runner.rows(tx, "document_mentioned_keys", doc_id=doc_id)}
    chunk_ids = [r["id"] for r in runner.rows(tx, "document_chunk_ids", doc_id=doc_id)]
    for batch in batches(chunk_ids):
        runner.rows(tx, "relations_delete_by_chunk", chunk_ids=list(batch))
    runner.rows(tx, "document_delete", doc_id=doc_id)
    return mentioned


def remove_orphans(runner: CypherRunner, tx: neo4j.ManagedTransaction, candidates: set[str]) -> None:
    """Remove non-curated entities among ``candidates`` that no chunk mentions any more, with
    their relation evidence, and the alias nodes no entity claims afterwards."""
    orphans: list[str] = []
    alias_keys: set[str] = set()
    for batch in batches(sorted(candidates)):
        for row in runner.rows(tx, "orphans_find", keys=list(batch)):
            orphans.append(row["key"])
            alias_keys.update(row["alias_keys"] or [])
    for batch in batches(orphans):
        runner.rows(tx, "entities_delete", keys=list(batch))
    for batch in batches(sorted(alias_keys)):
        runner.rows(tx, "aliases_prune", alias_keys=list(batch))
