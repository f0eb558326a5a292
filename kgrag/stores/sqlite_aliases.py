"""Alias administration on the embedded graph store: the GraphStore methods behind
``kgrag.aliases`` (add/remove aliases, rename, merge, split, delete, late mention linking,
audit log), mixed into ``SqliteGraphStore``.

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
from typing import Any

from kgrag.lexicon.normalize import normalize_alias
from kgrag.stores.alias_provenance import EPSILON, new_entity_key, reattribute, split_aliases, split_key
from kgrag.stores.base import AuditEntry, StoreError
from kgrag.stores.sqlite_db import IN_JSON, id_list
from kgrag.stores.sqlite_graph_writes import UNDIRECTED_RELATION_TYPES
from kgrag.types import Entity, Mention, Relation

ADMIN_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS entity_merges (id INTEGER PRIMARY KEY, keep_key TEXT NOT NULL, "
    "drop_key TEXT NOT NULL, entity TEXT NOT NULL, mentions TEXT NOT NULL, relations TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS entity_merges_keep ON entity_merges (keep_key)",
    "CREATE TABLE IF NOT EXISTS audit_log (id INTEGER PRIMARY KEY, at TEXT NOT NULL, who TEXT NOT NULL, "
    "action TEXT NOT NULL, target TEXT NOT NULL, details TEXT NOT NULL)",
)


class SqliteAliasAdmin:
    """Mixin for SqliteGraphStore (uses its ``_db``, ``_writes`` and ``get_entity``)."""

    @contextmanager
    def _admin_write(self, what: str) -> Iterator[sqlite3.Connection]:
        with self._db.write(what) as conn:
            for statement in ADMIN_SCHEMA:
                conn.execute(statement)
            self._writes += 1  # the cached traversal graph is stale after any of these
            yield conn

    # -- reads -------------------------------------------------------------------------------
    def list_entities(self, limit: int | None = None, offset: int = 0) -> list[Entity]:
        with self._db.read("list entities") as conn:
            keys = [r[0] for r in conn.execute(
                "SELECT key FROM entities ORDER BY key LIMIT ? OFFSET ?",
                (-1 if limit is None else max(0, int(limit)), max(0, int(offset))))]
            found = _entities(conn, keys)
        return [found[k] for k in keys]

    def audit_log(self, limit: int = 100) -> list[AuditEntry]:
        with self._db.read("read audit log") as conn:
            if not _has_table(conn, "audit_log"):
                return []
            rows = conn.execute(
                "SELECT at, who, action, target, details FROM audit_log ORDER BY id DESC LIMIT ?",
                (max(0, int(limit)),)).fetchall()
        return [AuditEntry(at, who, action, target, json.loads(details)) for at, who, action, target, details in rows]

    # -- aliases -----------------------------------------------------------------------------
    def add_aliases(self, key: str, aliases: Sequence[str]) -> list[str]:
        with self._admin_write(f"add aliases to {key!r}") as conn:
            _require(conn, key)
            return _add_aliases(conn, key, aliases)

    def remove_aliases(self, key: str, aliases: Sequence[str]) -> list[str]:
        wanted = {normalize_alias(a) for a in aliases} - {""}
        if key in wanted:
            raise StoreError(f"remove aliases of {key!r}: {key!r} is the entity's own name; rename it instead")
        with self._admin_write(f"remove aliases of {key!r}") as conn:
            _require(conn, key)
            rows = conn.execute(
                f"SELECT normalized, surface FROM aliases WHERE entity_key = ? AND normalized {IN_JSON} ORDER BY rowid",
                (key, id_list(wanted))).fetchall()
            conn.executemany("DELETE FROM aliases WHERE entity_key = ? AND normalized = ?", [(key, n) for n, _ in rows])
            return [surface for _, surface in rows]

    # -- entities ----------------------------------------------------------------------------
    def rename_entity(self, key: str, new_name: str) -> Entity:
        new_key = new_entity_key(f"rename {key!r}", new_name)
        with self._admin_write(f"rename {key!r}") as conn:
            old = _require(conn, key)
            if new_key == key:
                conn.execute("UPDATE entities SET name = ? WHERE key = ?", (new_name, key))
                conn.execute("UPDATE aliases SET surface = ? WHERE entity_key = ? AND normalized = ?", (new_name, key, key))
            else:
                if _exists(conn, new_key):
                    raise StoreError(f"rename {key!r}: an entity keyed {new_key!r} already exists; merge them instead")
                conn.execute("INSERT INTO entities (key, name, type, curated) VALUES (?, ?, ?, ?)",
                             (new_key, new_name, old.type, int(old.curated)))
                _add_aliases(conn, new_key, [new_name])  # the name first, as for any entity
                _move_entity(conn, key, new_key)
                conn.execute("UPDATE entity_merges SET keep_key = ? WHERE keep_key = ?", (new_key, key))
        return self.get_entity(new_key)

    def merge_entities(self, keep: str, drop: Sequence[str]) -> Entity:
        drop = list(dict.fromkeys(drop))
        if keep in drop:
            raise StoreError(f"merge into {keep!r}: an entity cannot be merged into itself")
        with self._admin_write(f"merge into {keep!r}") as conn:
            _require(conn, keep)
            for key in drop:
                _require(conn, key)
            for key in drop:
                _record_merge(conn, keep, key)
                conn.execute("UPDATE entities SET curated = max(curated, (SELECT curated FROM entities WHERE key = ?)) "
                             "WHERE key = ?", (key, keep))
                _move_entity(conn, key, keep)
                # The dropped entity's own merge records stay keyed by it (dormant): they
                # describe what it was made of, and apply again once a split restores it.
        return self.get_entity(keep)

    def split_entity(self, key: str, aliases: Sequence[str], new_name: str) -> Entity:
        what, new_key = split_key(key, new_name)
        with self._admin_write(what) as conn:
            old = _require(conn, key)
            if _exists(conn, new_key):
                raise StoreError(f"{what}: an entity keyed {new_key!r} already exists")
            owned = {normalize_alias(a): a for a in old.aliases}
            moving = split_aliases(what, key, new_key, aliases, owned)
            records = [r for r in conn.execute(
                "SELECT id, drop_key, entity FROM entity_merges WHERE keep_key = ? ORDER BY id",
                (key,)) if r[1] == new_key or r[1] in moving]
            etype = json.loads(records[0][2])["type"] if records else old.type
            conn.execute("INSERT INTO entities (key, name, type, curated) VALUES (?, ?, ?, 1)", (new_key, new_name, etype))
            conn.executemany("DELETE FROM aliases WHERE entity_key = ? AND normalized = ?", [(key, n) for n in moving])
            _add_aliases(conn, new_key, [new_name, *moving.values()])
            for record_id, drop_key, _ in records:
                # Read now: restoring an earlier record may have re-attributed evidence in it.
                mentions, relations = conn.execute(
                    "SELECT mentions, relations FROM entity_merges WHERE id = ?", (record_id,)).fetchone()
                _restore(conn, key, new_key, drop_key, json.loads(mentions), json.loads(relations))
                conn.execute("DELETE FROM entity_merges WHERE id = ?", (record_id,))
                # What the restored entity was itself merged from is its provenance again.
                conn.execute("UPDATE entity_merges SET keep_key = ? WHERE keep_key = ?", (new_key, drop_key))
        return self.get_entity(new_key)

    def delete_entity(self, key: str) -> bool:
        with self._admin_write(f"delete entity {key!r}") as conn:
            if not _exists(conn, key):
                return False
            conn.execute("DELETE FROM aliases WHERE entity_key = ?", (key,))
            conn.execute("DELETE FROM mentions WHERE entity_key = ?", (key,))
            conn.execute("DELETE FROM relation_evidence WHERE source_key = ? OR target_key = ?", (key, key))
            conn.execute("DELETE FROM entity_merges WHERE keep_key = ?", (key,))
            conn.execute("DELETE FROM entities WHERE key = ?", (key,))
            return True

    def add_mentions(self, mentions: Sequence[Mention], relations: Sequence[Relation]) -> int:
        for m in mentions:
            if m.count < 1:
                raise StoreError(f"add mentions: mention of {m.entity_key!r} in {m.chunk_id!r} has count {m.count}")
        rows = [_relation_row(r) for r in relations]
        with self._admin_write("add mentions") as conn:
            keys = {m.entity_key for m in mentions} | {k for r in rows for k in r[:2]}
            known = {r[0] for r in conn.execute(f"SELECT key FROM entities WHERE key {IN_JSON}", (id_list(keys),))}
            if keys - known:
                raise StoreError(f"add mentions: unknown entity key(s) {sorted(keys - known)[:5]}")
            chunk_ids = {m.chunk_id for m in mentions} | {r[3] for r in rows}
            stored = {r[0] for r in conn.execute(f"SELECT id FROM chunks WHERE id {IN_JSON}", (id_list(chunk_ids),))}
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

    def record_audit(self, entry: AuditEntry) -> None:
        try:
            details = json.dumps(entry.details, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"record audit: details are not JSON-serializable: {exc}") from exc
        with self._admin_write("record audit") as conn:
            conn.execute("INSERT INTO audit_log (at, who, action, target, details) VALUES (?, ?, ?, ?, ?)",
                         (entry.at, entry.who, entry.action, entry.target, details))


# -- steps (inside a write transaction) -------------------------------------------------------
def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)", (name,)).fetchone()[0]


def _exists(conn: sqlite3.Connection, key: str) -> bool:
    return conn.execute("SELECT EXISTS (SELECT 1 FROM entities WHERE key = ?)", (key,)).fetchone()[0]


def _entities(conn: sqlite3.Connection, keys: Sequence[str]) -> dict[str, Entity]:
    from kgrag.stores.sqlite_graph import _load_entities

    return _load_entities(conn, keys)


def _require(conn: sqlite3.Connection, key: str) -> Entity:
    found = _entities(conn, [key]).get(key)
    if found is None:
        raise StoreError(f"no entity keyed {key!r}")
    return found


def _add_aliases(conn: sqlite3.Connection, key: str, aliases: Sequence[str]) -> list[str]:
    have = {r[0] for r in conn.execute("SELECT normalized FROM aliases WHERE entity_key = ?", (key,))}
    added = []
    for surface in aliases:
        normalized = normalize_alias(surface or "")
        if normalized and normalized not in have:
            have.add(normalized)
            added.append(surface)
            conn.execute("INSERT INTO aliases (normalized, entity_key, surface) VALUES (?, ?, ?)", (normalized, key, surface))
    return added


def _relation_row(r: Relation) -> tuple[str, str, str, str, float]:
    source, target = r.source_key, r.target_key
    if r.type in UNDIRECTED_RELATION_TYPES and target < source:
        source, target = target, source
    return (source, target, r.type, r.chunk_id, float(r.weight))


def _move_entity(conn: sqlite3.Connection, old: str, new: str) -> None:
    """Everything of ``old`` onto ``new`` (which exists), then ``old`` is gone: aliases without
    normalized duplicates (in their order), mention counts and relation weights summed,
    relations that would join ``new`` to itself dropped."""
    surfaces = [r[0] for r in conn.execute("SELECT surface FROM aliases WHERE entity_key = ? ORDER BY rowid", (old,))]
    _add_aliases(conn, new, surfaces)
    conn.execute(
        "INSERT INTO mentions (entity_key, chunk_id, count) SELECT ?, chunk_id, count FROM mentions "
        "WHERE entity_key = ? ON CONFLICT DO UPDATE SET count = count + excluded.count", (new, old))
    rows = conn.execute(
        "SELECT source_key, target_key, type, chunk_id, weight FROM relation_evidence "
        "WHERE source_key = ? OR target_key = ?", (old, old)).fetchall()
    moved = [_relation_row(Relation(new if s == old else s, new if t == old else t, c, ty, w)) for s, t, ty, c, w in rows]
    for statement in ("DELETE FROM aliases WHERE entity_key = ?", "DELETE FROM mentions WHERE entity_key = ?",
                      "DELETE FROM entities WHERE key = ?"):
        conn.execute(statement, (old,))
    conn.execute("DELETE FROM relation_evidence WHERE source_key = ? OR target_key = ?", (old, old))
    _add_weights(conn, [r for r in moved if r[0] != r[1]])


def _add_weights(conn: sqlite3.Connection, rows: Sequence[tuple]) -> None:
    conn.executemany(
        "INSERT INTO relation_evidence (source_key, target_key, type, chunk_id, weight) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT DO UPDATE SET weight = weight + excluded.weight", rows)


def _record_merge(conn: sqlite3.Connection, keep: str, drop: str) -> None:
    entity = _entities(conn, [drop])[drop]
    mentions = conn.execute("SELECT chunk_id, count FROM mentions WHERE entity_key = ? ORDER BY chunk_id", (drop,)).fetchall()
    relations = conn.execute(
        "SELECT source_key, target_key, type, chunk_id, weight FROM relation_evidence "
        "WHERE source_key = ? OR target_key = ? ORDER BY chunk_id, source_key, target_key, type", (drop, drop)).fetchall()
    record: dict[str, Any] = {"key": entity.key, "name": entity.name, "type": entity.type,
                              "curated": entity.curated, "aliases": entity.aliases}
    conn.execute(
        "INSERT INTO entity_merges (keep_key, drop_key, entity, mentions, relations) VALUES (?, ?, ?, ?, ?)",
        (keep, drop, json.dumps(record, ensure_ascii=False), json.dumps(mentions, ensure_ascii=False),
         json.dumps(relations, ensure_ascii=False)))


def _restore(conn: sqlite3.Connection, key: str, new_key: str, drop_key: str,
             mentions: list[list], relations: list[list]) -> None:
    """Undo one recorded merge of ``drop_key`` into ``key``, the restored entity now keyed
    ``new_key``: its mention counts and relation weights come off ``key`` (never below zero)
    and go to ``new_key``. Evidence between the two (dropped by the merge) comes back as it was."""
    for chunk_id, count in mentions:
        row = conn.execute("SELECT count FROM mentions WHERE entity_key = ? AND chunk_id = ?", (key, chunk_id)).fetchone()
        if row is None:
            continue  # the chunk is gone, or re-ingested under other counts
        taken = min(int(count), row[0])
        if taken == row[0]:
            conn.execute("DELETE FROM mentions WHERE entity_key = ? AND chunk_id = ?", (key, chunk_id))
        else:
            conn.execute("UPDATE mentions SET count = count - ? WHERE entity_key = ? AND chunk_id = ?", (taken, key, chunk_id))
        conn.execute("INSERT INTO mentions (entity_key, chunk_id, count) VALUES (?, ?, ?) "
                     "ON CONFLICT DO UPDATE SET count = count + excluded.count", (new_key, chunk_id, taken))
    restored = []
    for source, target, rel_type, chunk_id, weight in relations:
        other = target if source == drop_key else source
        back = _relation_row(Relation(new_key if source == drop_key else source,
                                      new_key if target == drop_key else target, chunk_id, rel_type, weight))
        if other == key:  # dropped by the merge: comes back if its chunk is still there
            if conn.execute("SELECT EXISTS (SELECT 1 FROM chunks WHERE id = ?)", (chunk_id,)).fetchone()[0]:
                restored.append(back)
            continue
        merged = _relation_row(Relation(key if source == drop_key else source,
                                        key if target == drop_key else target, chunk_id, rel_type, weight))
        if not _exists(conn, other):
            restored += _reattribute(conn, key, other, new_key, rel_type, chunk_id, weight)
            continue
        row = conn.execute(
            "SELECT weight FROM relation_evidence WHERE source_key = ? AND target_key = ? AND type = ? AND chunk_id = ?",
            merged[:4]).fetchone()
        if row is None:
            continue
        taken = min(float(weight), row[0])
        if row[0] - taken <= EPSILON:
            conn.execute("DELETE FROM relation_evidence WHERE source_key = ? AND target_key = ? AND type = ? "
                         "AND chunk_id = ?", merged[:4])
        else:
            conn.execute("UPDATE relation_evidence SET weight = weight - ? WHERE source_key = ? AND target_key = ? "
                         "AND type = ? AND chunk_id = ?", (taken, *merged[:4]))
        if back[0] != back[1]:  # both ends restored into one entity: the evidence is gone, as in a merge
            restored.append((*back[:4], taken))
    _add_weights(conn, restored)


def _reattribute(conn: sqlite3.Connection, key: str, other: str, new_key: str, rel_type: str, chunk_id: str,
                 weight: float) -> list[tuple]:
    """Evidence with an entity that is itself still merged into ``key`` (splits out of merge
    order): it goes between ``new_key`` and ``key`` for now, and that entity's record learns
    it is evidence with ``new_key`` (``alias_provenance.reattribute``)."""
    record = conn.execute("SELECT id, relations FROM entity_merges WHERE keep_key = ? AND drop_key = ? ORDER BY id DESC",
                          (key, other)).fetchone()
    if record is None:
        return []  # merged somewhere else, or deleted: nothing to attribute it to
    rows, moved = reattribute(json.loads(record[1]), key, other, new_key, rel_type, chunk_id, weight)
    conn.execute("UPDATE entity_merges SET relations = ? WHERE id = ?", (json.dumps(rows, ensure_ascii=False), record[0]))
    if moved <= EPSILON or not conn.execute("SELECT EXISTS (SELECT 1 FROM chunks WHERE id = ?)", (chunk_id,)).fetchone()[0]:
        return []
    return [_relation_row(Relation(new_key, key, chunk_id, rel_type, moved))]
