"""Alias administration on the embedded graph store: the GraphStore methods behind
``kgrag.aliases`` (add/remove aliases, rename, merge, split, delete, late mention linking,
audit log), held by ``SqliteGraphStore`` on the same database. The arithmetic of merge and
split is ``kgrag.stores.merge_split``: this module reads the rows it needs and writes the diff.

Two tables of their own, created on first use (``CREATE TABLE IF NOT EXISTS``) so a graph file
written before alias administration existed keeps working without a schema bump:

* ``entity_merges``: provenance of each merge — the dropped entity as it was, with its own
  mentions and relation evidence — so a split that takes that entity's name back restores
  exactly what it had (while its chunks still exist). Chains unwind in reverse: the records of
  an entity merged away stay keyed by it and apply again once a split restores it;
* ``audit_log``: who changed what, when.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict

from kgrag.errors import StoreConflict, StoreError
from kgrag.stores.base import AuditEntry
from kgrag.stores.graph_rules import (
    check_added_mentions,
    merge_drops,
    new_entity_key,
    ordered,
    removable_aliases,
    split_aliases,
    split_key,
)
from kgrag.stores.merge_split import EvidenceDiff, MergeRecord, merge_record, new_aliases, plan_move, plan_split
from kgrag.stores.sqlite.db import IN_JSON, SqliteDatabase, id_list
from kgrag.stores.sqlite.graph_reads import evidence_of, existing_chunks, existing_entities, load_entities
from kgrag.text.normalize import normalize_alias
from kgrag.types import Entity, Mention, Relation

ADMIN_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS entity_merges (id INTEGER PRIMARY KEY, keep_key TEXT NOT NULL, "
    "drop_key TEXT NOT NULL, entity TEXT NOT NULL, mentions TEXT NOT NULL, relations TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS entity_merges_keep ON entity_merges (keep_key)",
    "CREATE TABLE IF NOT EXISTS audit_log (id INTEGER PRIMARY KEY, at TEXT NOT NULL, who TEXT NOT NULL, "
    "action TEXT NOT NULL, target TEXT NOT NULL, details TEXT NOT NULL)",
)


@contextmanager
def _admin_write(db: SqliteDatabase, what: str) -> Iterator[sqlite3.Connection]:
    with db.write(what) as conn:
        for statement in ADMIN_SCHEMA:
            conn.execute(statement)
        yield conn


class SqliteAliasAdmin:
    """The alias-admin role (``kgrag.stores.base.AliasAdmin``) on a graph database."""

    def __init__(self, db: SqliteDatabase):
        self._db = db

    def _entity(self, key: str) -> Entity | None:
        with self._db.read("get entity") as conn:
            return load_entities(conn, [key]).get(key)

    # -- reads -------------------------------------------------------------------------------
    def list_entities(self, limit: int | None = None, offset: int = 0) -> list[Entity]:
        with self._db.read("list entities") as conn:
            keys = [r[0] for r in conn.execute(
                "SELECT key FROM entities ORDER BY key LIMIT ? OFFSET ?",
                (-1 if limit is None else max(0, int(limit)), max(0, int(offset))))]
            found = load_entities(conn, keys)
        return [found[k] for k in keys]

    # -- aliases -----------------------------------------------------------------------------
    def add_aliases(self, key: str, aliases: Sequence[str]) -> list[str]:
        with _admin_write(self._db, f"add aliases to {key!r}") as conn:
            _require(conn, key)
            return _add_aliases(conn, key, aliases)

    def remove_aliases(self, key: str, aliases: Sequence[str]) -> list[str]:
        wanted = removable_aliases(key, aliases)
        with _admin_write(self._db, f"remove aliases of {key!r}") as conn:
            _require(conn, key)
            rows = conn.execute(
                f"SELECT normalized, surface FROM aliases WHERE entity_key = ? AND normalized {IN_JSON} ORDER BY rowid",
                (key, id_list(wanted))).fetchall()
            conn.executemany("DELETE FROM aliases WHERE entity_key = ? AND normalized = ?", [(key, n) for n, _ in rows])
            return [surface for _, surface in rows]

    # -- entities ----------------------------------------------------------------------------
    def rename_entity(self, key: str, new_name: str) -> Entity:
        new_key = new_entity_key(f"rename {key!r}", new_name)
        with _admin_write(self._db, f"rename {key!r}") as conn:
            old = _require(conn, key)
            if new_key == key:
                conn.execute("UPDATE entities SET name = ? WHERE key = ?", (new_name, key))
                conn.execute("UPDATE aliases SET surface = ? WHERE entity_key = ? AND normalized = ?", (new_name, key, key))
            else:
                if _exists(conn, new_key):
                    raise StoreConflict(f"rename {key!r}: an entity keyed {new_key!r} already exists; merge them instead")
                conn.execute("INSERT INTO entities (key, name, type, curated) VALUES (?, ?, ?, ?)",
                             (new_key, new_name, old.type, int(old.curated)))
                _add_aliases(conn, new_key, [new_name])  # the name first, as for any entity
                _move_entity(conn, key, new_key)
                conn.execute("UPDATE entity_merges SET keep_key = ? WHERE keep_key = ?", (new_key, key))
        return _found(self._entity(new_key), new_key)

    def merge_entities(self, keep: str, drop: Sequence[str]) -> Entity:
        drops = merge_drops(keep, drop)
        with _admin_write(self._db, f"merge into {keep!r}") as conn:
            _require(conn, keep)
            for key in drops:
                _require(conn, key)
            for key in drops:
                _record_merge(conn, keep, key)
                conn.execute("UPDATE entities SET curated = max(curated, (SELECT curated FROM entities WHERE key = ?)) "
                             "WHERE key = ?", (key, keep))
                _move_entity(conn, key, keep)
                # The dropped entity's own merge records stay keyed by it (dormant): they
                # describe what it was made of, and apply again once a split restores it.
        return _found(self._entity(keep), keep)

    def split_entity(self, key: str, aliases: Sequence[str], new_name: str) -> Entity:
        what, new_key = split_key(key, new_name)
        with _admin_write(self._db, what) as conn:
            old = _require(conn, key)
            if _exists(conn, new_key):
                raise StoreConflict(f"{what}: an entity keyed {new_key!r} already exists")
            owned = {normalize_alias(a): a for a in old.aliases}
            moving = split_aliases(what, key, new_key, aliases, owned)
            records = [MergeRecord.from_json(*row) for row in conn.execute(
                "SELECT id, drop_key, entity, mentions, relations FROM entity_merges WHERE keep_key = ? ORDER BY id",
                (key,))]
            named = {k for r in records for row in r.relations for k in row[:2]}
            plan = plan_split(key, new_key, old.type, moving, records, evidence_of(conn, [key, new_key]),
                              existing_entities(conn, named) | {new_key},
                              existing_chunks(conn, {row[3] for r in records for row in r.relations}))
            conn.execute("INSERT INTO entities (key, name, type, curated) VALUES (?, ?, ?, 1)",
                         (new_key, new_name, plan.entity_type))
            conn.executemany("DELETE FROM aliases WHERE entity_key = ? AND normalized = ?", [(key, n) for n in moving])
            _add_aliases(conn, new_key, [new_name, *moving.values()])
            _apply(conn, plan.evidence)
            conn.executemany("UPDATE entity_merges SET relations = ? WHERE id = ?",
                             [(rows, record_id) for record_id, rows in plan.rewritten.items()])
            conn.executemany("DELETE FROM entity_merges WHERE id = ?", [(record_id,) for record_id in plan.restored])
            # What a restored entity was itself merged from is its provenance again.
            conn.executemany("UPDATE entity_merges SET keep_key = ? WHERE keep_key = ?",
                             [(new_key, drop_key) for drop_key in plan.repoint])
        return _found(self._entity(new_key), new_key)

    def delete_entity(self, key: str) -> bool:
        with _admin_write(self._db, f"delete entity {key!r}") as conn:
            if not _exists(conn, key):
                return False
            conn.execute("DELETE FROM aliases WHERE entity_key = ?", (key,))
            conn.execute("DELETE FROM mentions WHERE entity_key = ?", (key,))
            conn.execute("DELETE FROM relation_evidence WHERE source_key = ? OR target_key = ?", (key, key))
            conn.execute("DELETE FROM entity_merges WHERE keep_key = ?", (key,))
            conn.execute("DELETE FROM entities WHERE key = ?", (key,))
            return True

    def add_mentions(self, mentions: Sequence[Mention], relations: Sequence[Relation]) -> int:
        check_added_mentions(mentions)
        rows = [(*ordered(r.source_key, r.target_key, r.type), r.type, r.chunk_id, float(r.weight)) for r in relations]
        with _admin_write(self._db, "add mentions") as conn:
            keys = {m.entity_key for m in mentions} | {k for r in rows for k in r[:2]}
            unknown = keys - existing_entities(conn, keys)
            if unknown:
                raise StoreConflict(f"add mentions: unknown entity key(s) {sorted(unknown)[:5]}")
            stored = existing_chunks(conn, {m.chunk_id for m in mentions} | {r[3] for r in rows})
            before = conn.total_changes
            conn.executemany(
                "INSERT INTO mentions (entity_key, chunk_id, count) VALUES (?, ?, ?) "
                "ON CONFLICT DO UPDATE SET count = excluded.count WHERE excluded.count > count",
                [(m.entity_key, m.chunk_id, int(m.count)) for m in mentions if m.chunk_id in stored])
            written = conn.total_changes - before
            conn.executemany(
                "INSERT INTO relation_evidence (source_key, target_key, type, chunk_id, weight) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT DO UPDATE SET weight = excluded.weight WHERE excluded.weight > weight",
                [r for r in rows if r[3] in stored])
            return written


class SqliteAuditLog:
    """The audit-log role (``kgrag.stores.base.AuditLog``) on a graph database."""

    def __init__(self, db: SqliteDatabase):
        self._db = db

    def record_audit(self, entry: AuditEntry) -> None:
        try:
            details = json.dumps(entry.details, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"record audit: details are not JSON-serializable: {exc}") from exc
        with _admin_write(self._db, "record audit") as conn:
            conn.execute("INSERT INTO audit_log (at, who, action, target, details) VALUES (?, ?, ?, ?, ?)",
                         (entry.at, entry.who, entry.action, entry.target, details))

    def audit_log(self, limit: int = 100) -> list[AuditEntry]:
        with self._db.read("read audit log") as conn:
            if not _has_table(conn, "audit_log"):
                return []
            rows = conn.execute(
                "SELECT at, who, action, target, details FROM audit_log ORDER BY id DESC LIMIT ?",
                (max(0, int(limit)),)).fetchall()
        return [AuditEntry(at, who, action, target, json.loads(details)) for at, who, action, target, details in rows]


# -- steps (inside a write transaction) -------------------------------------------------------
def _found(entity: Entity | None, key: str) -> Entity:
    if entity is None:  # only when another process deleted it between the write and this read
        raise StoreConflict(f"no entity keyed {key!r}")
    return entity


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)", (name,)).fetchone()[0]


def _exists(conn: sqlite3.Connection, key: str) -> bool:
    return conn.execute("SELECT EXISTS (SELECT 1 FROM entities WHERE key = ?)", (key,)).fetchone()[0]


def _require(conn: sqlite3.Connection, key: str) -> Entity:
    found = load_entities(conn, [key]).get(key)
    if found is None:
        raise StoreConflict(f"no entity keyed {key!r}")
    return found


def _add_aliases(conn: sqlite3.Connection, key: str, aliases: Sequence[str]) -> list[str]:
    have = [r[0] for r in conn.execute("SELECT normalized FROM aliases WHERE entity_key = ?", (key,))]
    added = new_aliases(have, aliases)
    conn.executemany("INSERT INTO aliases (normalized, entity_key, surface) VALUES (?, ?, ?)",
                     [(normalized, key, surface) for surface, normalized in added])
    return [surface for surface, _ in added]


def _apply(conn: sqlite3.Connection, diff: EvidenceDiff) -> None:
    """Write a diff: rows it removes, then rows it sets (inserted or updated to the value)."""
    conn.executemany("DELETE FROM mentions WHERE entity_key = ? AND chunk_id = ?", diff.mentions_unset)
    conn.executemany(
        "INSERT INTO mentions (entity_key, chunk_id, count) VALUES (?, ?, ?) "
        "ON CONFLICT DO UPDATE SET count = excluded.count",
        [(key, chunk_id, count) for (key, chunk_id), count in diff.mentions_set.items()])
    conn.executemany(
        "DELETE FROM relation_evidence WHERE source_key = ? AND target_key = ? AND type = ? AND chunk_id = ?",
        diff.relations_unset)
    conn.executemany(
        "INSERT INTO relation_evidence (source_key, target_key, type, chunk_id, weight) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT DO UPDATE SET weight = excluded.weight",
        [(*edge, weight) for edge, weight in diff.relations_set.items()])


def _move_entity(conn: sqlite3.Connection, old: str, new: str) -> None:
    """Everything of ``old`` onto ``new`` (which exists), then ``old`` is gone: aliases without
    normalized duplicates (in their order), mentions and relations by ``merge_split.plan_move``."""
    surfaces = [r[0] for r in conn.execute("SELECT surface FROM aliases WHERE entity_key = ? ORDER BY rowid", (old,))]
    _add_aliases(conn, new, surfaces)
    _apply(conn, plan_move(evidence_of(conn, [old, new]), old, new))
    conn.execute("DELETE FROM aliases WHERE entity_key = ?", (old,))
    conn.execute("DELETE FROM entities WHERE key = ?", (old,))


def _record_merge(conn: sqlite3.Connection, keep: str, drop: str) -> None:
    entity = _require(conn, drop)
    record = merge_record(asdict(entity), evidence_of(conn, [drop]))
    conn.execute(
        "INSERT INTO entity_merges (keep_key, drop_key, entity, mentions, relations) VALUES (?, ?, ?, ?, ?)",
        (keep, drop, record["entity"], record["mentions"], record["relations"]))
