"""Schema and write steps of the embedded graph store (``sqlite.graph``).

Input is validated before a transaction opens (``kgrag.stores.graph_rules``); the steps here
run inside one and raise StoreError to roll it back.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from kgrag.errors import StoreError
from kgrag.stores.graph_rules import check_entity_keys
from kgrag.stores.sqlite.db import IN_JSON, id_list
from kgrag.text.normalize import normalize_alias
from kgrag.types import Entity

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE documents (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, title TEXT NOT NULL, hash TEXT NOT NULL,
    format TEXT NOT NULL, metadata TEXT NOT NULL
);
CREATE TABLE chunks (
    id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, section_path TEXT NOT NULL,
    preview TEXT NOT NULL, ordinal INTEGER NOT NULL
);
CREATE INDEX chunks_doc_id ON chunks (doc_id);
CREATE TABLE entities (
    key TEXT PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL, curated INTEGER NOT NULL
);
CREATE TABLE aliases (
    normalized TEXT NOT NULL, entity_key TEXT NOT NULL, surface TEXT NOT NULL,
    PRIMARY KEY (normalized, entity_key)
);
CREATE INDEX aliases_entity ON aliases (entity_key);
CREATE TABLE mentions (
    entity_key TEXT NOT NULL, chunk_id TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (entity_key, chunk_id)
) WITHOUT ROWID;
CREATE INDEX mentions_chunk ON mentions (chunk_id);
CREATE TABLE relation_evidence (
    source_key TEXT NOT NULL, target_key TEXT NOT NULL, type TEXT NOT NULL,
    chunk_id TEXT NOT NULL, weight REAL NOT NULL,
    PRIMARY KEY (source_key, target_key, type, chunk_id)
) WITHOUT ROWID;
CREATE INDEX relation_target ON relation_evidence (target_key, source_key);
CREATE INDEX relation_chunk ON relation_evidence (chunk_id)
"""

# Added to files made before it (run on every open). ``mentions_of(per_key=50)`` reads each
# entity's top mentions straight from it: 29 graph-path calls at 50k passages (~270 entities
# each), 113–168 ms a call sorting every mention by count, 9–15 ms with the index.
SCHEMA_ADDITIONS = """
CREATE INDEX IF NOT EXISTS mentions_top ON mentions (entity_key, count DESC, chunk_id)
"""


# -- checks inside a transaction -------------------------------------------------------------
def check_entities_exist(conn: sqlite3.Connection, what: str, keys: set[str]) -> None:
    if not keys:
        return
    known = {r[0] for r in conn.execute(f"SELECT key FROM entities WHERE key {IN_JSON}", (id_list(keys),))}
    missing = sorted(keys - known)
    if missing:
        raise StoreError(f"{what}: mentions or relations reference unknown entity key(s) {missing[:5]}")


# -- writes (inside a transaction) ---------------------------------------------------------
_OF_DOC_CHUNKS = "chunk_id IN (SELECT id FROM chunks WHERE doc_id = ?)"


def remove_document_content(conn: sqlite3.Connection, doc_id: str) -> set[str]:
    """Delete a document and everything it evidenced; returns the entity keys it mentioned
    (candidates for orphan removal)."""
    mentioned = {
        r[0] for r in conn.execute(f"SELECT DISTINCT entity_key FROM mentions WHERE {_OF_DOC_CHUNKS}", (doc_id,))
    }
    conn.execute(f"DELETE FROM mentions WHERE {_OF_DOC_CHUNKS}", (doc_id,))
    conn.execute(f"DELETE FROM relation_evidence WHERE {_OF_DOC_CHUNKS}", (doc_id,))
    conn.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
    conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
    return mentioned


def remove_orphans(conn: sqlite3.Connection, candidates: set[str]) -> None:
    """Remove non-curated entities among ``candidates`` that no chunk mentions any more, with
    their aliases and any relation evidence still naming them."""
    if not candidates:
        return
    orphans = [
        (r[0],)
        for r in conn.execute(
            f"SELECT key FROM entities e WHERE key {IN_JSON} AND curated = 0 "
            "AND NOT EXISTS (SELECT 1 FROM mentions m WHERE m.entity_key = e.key)",
            (id_list(candidates),),
        )
    ]
    conn.executemany("DELETE FROM aliases WHERE entity_key = ?", orphans)
    conn.executemany("DELETE FROM relation_evidence WHERE source_key = ?", orphans)
    conn.executemany("DELETE FROM relation_evidence WHERE target_key = ?", orphans)
    conn.executemany("DELETE FROM entities WHERE key = ?", orphans)


def merge_entities(conn: sqlite3.Connection, entities: Sequence[Entity]) -> None:
    """Create entities or merge into existing ones: name/type kept, curated sticks once set,
    aliases (the name included) added unless the entity already has that normalized form."""
    check_entity_keys(entities)
    conn.executemany(
        "INSERT INTO entities (key, name, type, curated) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (key) DO UPDATE SET curated = max(curated, excluded.curated)",
        [(e.key, e.name, e.type, int(e.curated)) for e in entities],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO aliases (normalized, entity_key, surface) VALUES (?, ?, ?)",
        [
            (normalized, e.key, surface)
            for e in entities
            for surface in (e.name, *e.aliases)
            if (normalized := normalize_alias(surface))
        ],
    )
