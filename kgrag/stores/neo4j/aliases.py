"""Alias administration on the Neo4j graph store: the GraphStore methods behind
``kgrag.aliases``, held by ``Neo4jGraphStore`` on the same ``CypherRunner``.

Each operation is one write transaction. It reads the few rows it touches (an entity, its
mentions, its relation evidence, its merge records), lets ``kgrag.stores.merge_split`` do the
arithmetic — sums on merge, subtractions on split — and writes the resulting diff with small
set/unset statements (``cypher/aliases_*.cypher``, every value a bound parameter). Appending
aliases is the one step done in Cypher: ``aliases_add`` folds them in with ``reduce()`` so none
is stored twice.

Provenance of merges lives in ``(:EntityMerge)`` nodes and the audit log in ``(:AuditEntry)``
nodes, both outside the entity graph (no relationship touches them).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from typing import Any

import neo4j

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
from kgrag.stores.merge_split import (
    Edge,
    Evidence,
    EvidenceDiff,
    MergeRecord,
    merge_record,
    new_aliases,
    plan_move,
    plan_split,
)
from kgrag.stores.neo4j.driver import CypherRunner
from kgrag.stores.neo4j.records import entity_of
from kgrag.types import Entity, Mention, Relation

_ALL = 2**31 - 1  # LIMIT for "no limit" with an offset (ArcadeDB refuses 64-bit limits)

Tx = neo4j.ManagedTransaction


class Neo4jAliasAdmin:
    """The alias-admin role (``kgrag.stores.base.AliasAdmin``) over a CypherRunner."""

    def __init__(self, runner: CypherRunner):
        self._run = runner

    def _read_entity(self, key: str) -> Entity:
        rows = self._run.read("get entity", lambda tx: self._run.rows(tx, "entities_get", keys=[key]))
        if not rows:  # only when another client deleted it between the write and this read
            raise StoreConflict(f"no entity keyed {key!r}")
        return entity_of(rows[0])

    # -- reads -------------------------------------------------------------------------------
    def list_entities(self, limit: int | None = None, offset: int = 0) -> list[Entity]:
        if limit is None and offset <= 0:
            rows = self._run.read("list entities", lambda tx: self._run.rows(tx, "aliases_entity_list"))
        else:
            page = _ALL if limit is None else max(0, int(limit))
            rows = self._run.read("list entities", lambda tx: self._run.rows(
                tx, "aliases_entity_page", limit=page, offset=max(0, int(offset))))
        return [entity_of(r) for r in rows]

    # -- aliases -----------------------------------------------------------------------------
    def add_aliases(self, key: str, aliases: Sequence[str]) -> list[str]:
        def work(tx: Tx) -> list[str]:
            entity = self._require(tx, key)
            return self._append_aliases(tx, entity, aliases)

        return self._run.write(f"add aliases to {key!r}", work)

    def remove_aliases(self, key: str, aliases: Sequence[str]) -> list[str]:
        wanted = removable_aliases(key, aliases)

        def work(tx: Tx) -> list[str]:
            entity = self._require(tx, key)
            removed = [s for s, n in zip(entity["aliases"], entity["alias_keys"]) if n in wanted]
            if removed:
                self._drop_aliases(tx, entity, wanted)
            return removed

        return self._run.write(f"remove aliases of {key!r}", work)

    # -- entities ----------------------------------------------------------------------------
    def rename_entity(self, key: str, new_name: str) -> Entity:
        new_key = new_entity_key(f"rename {key!r}", new_name)

        def work(tx: Tx) -> None:
            old = self._require(tx, key)
            if new_key == key:
                surfaces = [new_name if n == key else s for s, n in zip(old["aliases"], old["alias_keys"])]
                self._run.rows(tx, "aliases_entity_update", key=key, display_name=new_name, curated=bool(old["curated"]))
                self._run.rows(tx, "aliases_replace", key=key, surfaces=surfaces, alias_keys=old["alias_keys"])
                return
            if self._entity(tx, new_key) is not None:
                raise StoreConflict(f"rename {key!r}: an entity keyed {new_key!r} already exists; merge them instead")
            self._run.rows(tx, "aliases_entity_create", key=new_key, display_name=new_name, type=old["type"],
                           curated=bool(old["curated"]))
            new = self._require(tx, new_key)
            self._append_aliases(tx, new, [new_name])  # the name first, as for any entity
            self._move(tx, old, new_key)
            self._run.rows(tx, "aliases_merge_records_repoint", old=key, new=new_key)

        self._run.write(f"rename {key!r}", work)
        return self._read_entity(new_key)

    def merge_entities(self, keep: str, drop: Sequence[str]) -> Entity:
        drops = merge_drops(keep, drop)

        def work(tx: Tx) -> None:
            kept = self._require(tx, keep)
            dropped = [self._require(tx, key) for key in drops]
            curated = bool(kept["curated"])
            for index, entity in enumerate(dropped):
                key = entity["key"]
                record = merge_record(entity, self._evidence(tx, [key]))
                self._run.rows(tx, "aliases_merge_record_create", keep_key=keep, drop_key=key,
                               seq=time.time_ns() + index, **record)
                curated = curated or bool(entity["curated"])
                self._move(tx, entity, keep)  # its own merge records stay keyed by it (dormant)
            self._run.rows(tx, "aliases_entity_update", key=keep, display_name=kept["name"], curated=curated)

        self._run.write(f"merge into {keep!r}", work)
        return self._read_entity(keep)

    def split_entity(self, key: str, aliases: Sequence[str], new_name: str) -> Entity:
        what, new_key = split_key(key, new_name)

        def work(tx: Tx) -> None:
            old = self._require(tx, key)
            if self._entity(tx, new_key) is not None:
                raise StoreConflict(f"{what}: an entity keyed {new_key!r} already exists")
            owned = dict(zip(old["alias_keys"], old["aliases"]))
            moving = split_aliases(what, key, new_key, aliases, owned)
            records = [MergeRecord.from_json(r["seq"], r["drop_key"], r["entity"], r["mentions"], r["relations"])
                       for r in self._run.rows(tx, "aliases_merge_records_of", key=key)]
            named = {k for r in records for row in r.relations for k in row[:2]}
            chunk_ids = {row[3] for r in records for row in r.relations}
            plan = plan_split(key, new_key, old["type"], moving, records, self._evidence(tx, [key, new_key]),
                              self._known(tx, named) | {new_key}, self._chunks(tx, chunk_ids))
            self._run.rows(tx, "aliases_entity_create", key=new_key, display_name=new_name, type=plan.entity_type,
                           curated=True)
            self._drop_aliases(tx, old, set(moving))
            self._append_aliases(tx, self._require(tx, new_key), [new_name, *moving.values()])
            self._apply(tx, plan.evidence)
            for seq, rows in plan.rewritten.items():
                self._run.rows(tx, "aliases_merge_record_update", key=key, seq=seq, relations=rows)
            if plan.restored:
                self._run.rows(tx, "aliases_merge_records_delete", key=key, seqs=plan.restored)
            for drop_key in plan.repoint:
                self._run.rows(tx, "aliases_merge_records_repoint", old=drop_key, new=new_key)

        self._run.write(what, work)
        return self._read_entity(new_key)

    def delete_entity(self, key: str) -> bool:
        def work(tx: Tx) -> bool:
            entity = self._entity(tx, key)
            if entity is None:
                return False
            self._run.rows(tx, "entities_delete", keys=[key])
            self._run.rows(tx, "aliases_prune", alias_keys=list(entity["alias_keys"] or []))
            self._run.rows(tx, "aliases_merge_records_delete", key=key, seqs=None)
            return True

        return self._run.write(f"delete entity {key!r}", work)

    def add_mentions(self, mentions: Sequence[Mention], relations: Sequence[Relation]) -> int:
        check_added_mentions(mentions)
        wanted_m: dict[tuple[str, str], int] = {}
        for m in mentions:
            wanted_m[(m.entity_key, m.chunk_id)] = max(wanted_m.get((m.entity_key, m.chunk_id), 0), int(m.count))
        wanted_r: dict[Edge, float] = {}
        for r in relations:
            edge = (*ordered(r.source_key, r.target_key, r.type), r.type, r.chunk_id)
            wanted_r[edge] = max(wanted_r.get(edge, 0.0), float(r.weight))

        def work(tx: Tx) -> int:
            keys = {k for k, _ in wanted_m} | {k for e in wanted_r for k in e[:2]}
            unknown = keys - self._known(tx, keys)
            if unknown:
                raise StoreConflict(f"add mentions: unknown entity key(s) {sorted(unknown)[:5]}")
            stored = self._chunks(tx, {c for _, c in wanted_m} | {e[3] for e in wanted_r})
            have = self._evidence(tx, sorted({k for k, _ in wanted_m} | {e[0] for e in wanted_r}))
            rows = {mk: n for mk, n in wanted_m.items() if mk[1] in stored and n > have.mentions.get(mk, 0)}
            self._apply(tx, EvidenceDiff(mentions_set=rows, relations_set={
                e: w for e, w in wanted_r.items() if e[3] in stored and w > have.relations.get(e, 0.0)}))
            return len(rows)

        return self._run.write("add mentions", work)

    # -- steps (inside a transaction) --------------------------------------------------------
    def _entity(self, tx: Tx, key: str) -> dict[str, Any] | None:
        rows = self._run.rows(tx, "aliases_entity", key=key)
        if not rows:
            return None
        row = rows[0]
        row["aliases"], row["alias_keys"] = list(row["aliases"] or []), list(row["alias_keys"] or [])
        return row

    def _require(self, tx: Tx, key: str) -> dict[str, Any]:
        entity = self._entity(tx, key)
        if entity is None:
            raise StoreConflict(f"no entity keyed {key!r}")
        return entity

    def _known(self, tx: Tx, keys: Iterable[str]) -> set[str]:
        return {r["key"] for r in self._run.rows(tx, "entities_known", keys=sorted(keys))}

    def _chunks(self, tx: Tx, chunk_ids: Iterable[str]) -> set[str]:
        return {r["id"] for r in self._run.rows(tx, "aliases_chunks_known", chunk_ids=sorted(chunk_ids))}

    def _append_aliases(self, tx: Tx, entity: dict[str, Any], surfaces: Sequence[str]) -> list[str]:
        added = new_aliases(entity["alias_keys"], surfaces)
        if added:
            self._run.rows(tx, "aliases_add", key=entity["key"],
                           aliases=[{"surface": s, "normalized": n} for s, n in added])
        return [surface for surface, _ in added]

    def _drop_aliases(self, tx: Tx, entity: dict[str, Any], normalized: set[str]) -> None:
        kept = [(s, n) for s, n in zip(entity["aliases"], entity["alias_keys"]) if n not in normalized]
        self._run.rows(tx, "aliases_replace", key=entity["key"], surfaces=[s for s, _ in kept],
                       alias_keys=[n for _, n in kept])
        self._run.rows(tx, "aliases_unlink", key=entity["key"], alias_keys=sorted(normalized))
        self._run.rows(tx, "aliases_prune", alias_keys=sorted(normalized))

    def _evidence(self, tx: Tx, keys: Sequence[str]) -> Evidence:
        """Every mention and relation evidence row of the given entities."""
        rows = Evidence()
        for r in self._run.rows(tx, "mentions_of", keys=list(keys)):
            rows.mentions[(r["key"], r["chunk_id"])] = int(r["count"])
        for key in keys:
            for r in self._run.rows(tx, "aliases_relations_out", key=key) + self._run.rows(tx, "aliases_relations_in", key=key):
                rows.relations[(r["source"], r["target"], r["type"], r["chunk_id"])] = float(r["weight"])
        return rows

    def _apply(self, tx: Tx, diff: EvidenceDiff) -> None:
        """Write a diff: rows it removes, then rows it sets."""
        if diff.mentions_unset:
            self._run.rows(tx, "aliases_mentions_unset", rows=[{"key": k, "chunk_id": c} for k, c in diff.mentions_unset])
        if diff.mentions_set:
            self._run.rows(tx, "aliases_mentions_set", rows=[
                {"key": k, "chunk_id": c, "count": n} for (k, c), n in diff.mentions_set.items()])
        if diff.relations_unset:
            self._run.rows(tx, "aliases_relations_unset", rows=[_relation(e, 0.0) for e in diff.relations_unset])
        if diff.relations_set:
            self._run.rows(tx, "aliases_relations_set", rows=[_relation(e, w) for e, w in diff.relations_set.items()])

    def _move(self, tx: Tx, old: dict[str, Any], new_key: str) -> None:
        """Everything of ``old`` onto ``new_key`` (which exists), then ``old`` is gone."""
        key = old["key"]
        self._append_aliases(tx, self._require(tx, new_key), old["aliases"])
        self._apply(tx, plan_move(self._evidence(tx, [key, new_key]), key, new_key))
        self._run.rows(tx, "entities_delete", keys=[key])
        self._run.rows(tx, "aliases_prune", alias_keys=old["alias_keys"])


class Neo4jAuditLog:
    """The audit-log role (``kgrag.stores.base.AuditLog``): ``(:AuditEntry)`` nodes."""

    def __init__(self, runner: CypherRunner):
        self._run = runner

    def record_audit(self, entry: AuditEntry) -> None:
        try:
            details = json.dumps(entry.details, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"record audit: details are not JSON-serializable: {exc}") from exc
        self._run.write("record audit", lambda tx: self._run.rows(
            tx, "aliases_audit_create", seq=time.time_ns(), at=entry.at, who=entry.who, action=entry.action,
            target=entry.target, details=details))

    def audit_log(self, limit: int = 100) -> list[AuditEntry]:
        rows = self._run.read("read audit log", lambda tx: self._run.rows(tx, "aliases_audit_list", limit=max(0, int(limit))))
        return [AuditEntry(r["at"], r["who"], r["action"], r["target"], json.loads(r["details"] or "{}")) for r in rows]


def _relation(edge: Edge, weight: float) -> dict[str, Any]:
    source, target, rel_type, chunk_id = edge
    return {"source": source, "target": target, "type": rel_type, "chunk_id": chunk_id, "weight": weight}
