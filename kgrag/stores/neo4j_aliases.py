"""Alias administration on the Neo4j graph store: the GraphStore methods behind
``kgrag.aliases``, mixed into ``Neo4jGraphStore`` (uses its ``_run``, a CypherRunner).

Each operation is one write transaction. It reads the few rows it touches (an entity, its
mentions, its relation evidence), does the arithmetic here — sums on merge, subtractions on
split, maxima for late linking — and writes the results with small set/unset statements
(``cypher/aliases_*.cypher``, every value a bound parameter). Appending aliases is the one
step done in Cypher: ``aliases_add`` folds them in with ``reduce()`` so none is stored twice.

Provenance of merges lives in ``(:EntityMerge)`` nodes and the audit log in ``(:AuditEntry)``
nodes, both outside the entity graph (no relationship touches them).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from kgrag.lexicon.normalize import normalize_alias
from kgrag.stores.alias_provenance import EPSILON, new_entity_key, reattribute, split_aliases, split_key
from kgrag.stores.base import AuditEntry, StoreError
from kgrag.stores.sqlite_graph_writes import UNDIRECTED_RELATION_TYPES
from kgrag.types import Entity, Mention, Relation

_ALL = 2**31 - 1  # LIMIT for "no limit" with an offset (ArcadeDB refuses 64-bit limits)

Edge = tuple[str, str, str, str]  # (source, target, type, chunk id), undirected types ordered


def _edge(source: str, target: str, rel_type: str, chunk_id: str) -> Edge:
    if rel_type in UNDIRECTED_RELATION_TYPES and target < source:
        source, target = target, source
    return (source, target, rel_type, chunk_id)


def _alias_pairs(surfaces: Sequence[str]) -> list[dict[str, str]]:
    return [{"surface": s, "normalized": n} for s in surfaces if (n := normalize_alias(s or ""))]


def _entity_of(row: dict[str, Any]) -> Entity:
    return Entity(key=row["key"], name=row["name"], type=row["type"], aliases=list(row["aliases"] or []),
                  curated=bool(row["curated"]))


class Neo4jAliasAdmin:
    """Mixin for Neo4jGraphStore."""

    # -- reads -------------------------------------------------------------------------------
    def list_entities(self, limit: int | None = None, offset: int = 0) -> list[Entity]:
        if limit is None and offset <= 0:
            rows = self._run.read("list entities", lambda tx: self._run.rows(tx, "aliases_entity_list"))
        else:
            limit = _ALL if limit is None else max(0, int(limit))
            rows = self._run.read("list entities", lambda tx: self._run.rows(
                tx, "aliases_entity_page", limit=limit, offset=max(0, int(offset))))
        return [_entity_of(r) for r in rows]

    def audit_log(self, limit: int = 100) -> list[AuditEntry]:
        rows = self._run.read("read audit log", lambda tx: self._run.rows(tx, "aliases_audit_list", limit=max(0, int(limit))))
        return [AuditEntry(r["at"], r["who"], r["action"], r["target"], json.loads(r["details"] or "{}")) for r in rows]

    # -- aliases -----------------------------------------------------------------------------
    def add_aliases(self, key: str, aliases: Sequence[str]) -> list[str]:
        def work(tx) -> list[str]:
            entity = self._require(tx, key)
            return self._append_aliases(tx, entity, aliases)

        return self._run.write(f"add aliases to {key!r}", work)

    def remove_aliases(self, key: str, aliases: Sequence[str]) -> list[str]:
        wanted = {normalize_alias(a or "") for a in aliases} - {""}
        if key in wanted:
            raise StoreError(f"remove aliases of {key!r}: {key!r} is the entity's own name; rename it instead")

        def work(tx) -> list[str]:
            entity = self._require(tx, key)
            removed = [s for s, n in zip(entity["aliases"], entity["alias_keys"]) if n in wanted]
            if removed:
                self._drop_aliases(tx, entity, wanted)
            return removed

        return self._run.write(f"remove aliases of {key!r}", work)

    # -- entities ----------------------------------------------------------------------------
    def rename_entity(self, key: str, new_name: str) -> Entity:
        new_key = new_entity_key(f"rename {key!r}", new_name)

        def work(tx) -> None:
            old = self._require(tx, key)
            if new_key == key:
                surfaces = [new_name if n == key else s for s, n in zip(old["aliases"], old["alias_keys"])]
                self._run.rows(tx, "aliases_entity_update", key=key, display_name=new_name, curated=bool(old["curated"]))
                self._run.rows(tx, "aliases_replace", key=key, surfaces=surfaces, alias_keys=old["alias_keys"])
                return
            if self._entity(tx, new_key) is not None:
                raise StoreError(f"rename {key!r}: an entity keyed {new_key!r} already exists; merge them instead")
            self._run.rows(tx, "aliases_entity_create", key=new_key, display_name=new_name, type=old["type"],
                           curated=bool(old["curated"]))
            new = self._require(tx, new_key)
            self._append_aliases(tx, new, [new_name])  # the name first, as for any entity
            self._move(tx, old, new_key)
            self._run.rows(tx, "aliases_merge_records_repoint", old=key, new=new_key)

        self._run.write(f"rename {key!r}", work)
        return self.get_entity(new_key)

    def merge_entities(self, keep: str, drop: Sequence[str]) -> Entity:
        drop = list(dict.fromkeys(drop))
        if keep in drop:
            raise StoreError(f"merge into {keep!r}: an entity cannot be merged into itself")

        def work(tx) -> None:
            kept = self._require(tx, keep)
            dropped = [self._require(tx, key) for key in drop]
            curated = bool(kept["curated"])
            for index, entity in enumerate(dropped):
                key = entity["key"]
                self._run.rows(
                    tx, "aliases_merge_record_create", keep_key=keep, drop_key=key, seq=time.time_ns() + index,
                    entity=json.dumps({k: entity[k] for k in ("key", "name", "type", "curated", "aliases")}, ensure_ascii=False),
                    mentions=json.dumps(sorted(self._mentions(tx, key).items()), ensure_ascii=False),
                    relations=json.dumps(sorted([*e, w] for e, w in self._relations(tx, key).items()), ensure_ascii=False))
                curated = curated or bool(entity["curated"])
                self._move(tx, entity, keep)  # its own merge records stay keyed by it (see SQLite)
            self._run.rows(tx, "aliases_entity_update", key=keep, display_name=kept["name"], curated=curated)

        self._run.write(f"merge into {keep!r}", work)
        return self.get_entity(keep)

    def split_entity(self, key: str, aliases: Sequence[str], new_name: str) -> Entity:
        what, new_key = split_key(key, new_name)

        def work(tx) -> None:
            old = self._require(tx, key)
            if self._entity(tx, new_key) is not None:
                raise StoreError(f"{what}: an entity keyed {new_key!r} already exists")
            owned = dict(zip(old["alias_keys"], old["aliases"]))
            moving = split_aliases(what, key, new_key, aliases, owned)
            records = [r for r in self._run.rows(tx, "aliases_merge_records_of", key=key)
                       if r["drop_key"] == new_key or r["drop_key"] in moving]
            etype = json.loads(records[0]["entity"])["type"] if records else old["type"]
            self._run.rows(tx, "aliases_entity_create", key=new_key, display_name=new_name, type=etype, curated=True)
            self._drop_aliases(tx, old, set(moving))
            self._append_aliases(tx, self._require(tx, new_key), [new_name, *moving.values()])
            for record in records:
                # Read now: restoring an earlier record may have re-attributed evidence in it.
                fresh = next(r for r in self._run.rows(tx, "aliases_merge_records_of", key=key) if r["seq"] == record["seq"])
                self._restore(tx, key, new_key, record["drop_key"], json.loads(fresh["mentions"]),
                              json.loads(fresh["relations"]))
            if records:
                self._run.rows(tx, "aliases_merge_records_delete", key=key, seqs=[r["seq"] for r in records])
            for record in records:
                if record["drop_key"] != new_key:
                    self._run.rows(tx, "aliases_merge_records_repoint", old=record["drop_key"], new=new_key)

        self._run.write(what, work)
        return self.get_entity(new_key)

    def delete_entity(self, key: str) -> bool:
        def work(tx) -> bool:
            entity = self._entity(tx, key)
            if entity is None:
                return False
            self._run.rows(tx, "entities_delete", keys=[key])
            self._run.rows(tx, "aliases_prune", alias_keys=list(entity["alias_keys"] or []))
            self._run.rows(tx, "aliases_merge_records_delete", key=key, seqs=None)
            return True

        return self._run.write(f"delete entity {key!r}", work)

    def add_mentions(self, mentions: Sequence[Mention], relations: Sequence[Relation]) -> int:
        for m in mentions:
            if m.count < 1:
                raise StoreError(f"add mentions: mention of {m.entity_key!r} in {m.chunk_id!r} has count {m.count}")
        wanted_m: dict[tuple[str, str], int] = {}
        for m in mentions:
            wanted_m[(m.entity_key, m.chunk_id)] = max(wanted_m.get((m.entity_key, m.chunk_id), 0), int(m.count))
        wanted_r: dict[Edge, float] = {}
        for r in relations:
            edge = _edge(r.source_key, r.target_key, r.type, r.chunk_id)
            wanted_r[edge] = max(wanted_r.get(edge, 0.0), float(r.weight))

        def work(tx) -> int:
            keys = sorted({k for k, _ in wanted_m} | {k for e in wanted_r for k in e[:2]})
            known = {r["key"] for r in self._run.rows(tx, "entities_known", keys=keys)}
            if set(keys) - known:
                raise StoreError(f"add mentions: unknown entity key(s) {sorted(set(keys) - known)[:5]}")
            chunk_ids = sorted({c for _, c in wanted_m} | {e[3] for e in wanted_r})
            stored = {r["id"] for r in self._run.rows(tx, "aliases_chunks_known", chunk_ids=chunk_ids)}
            have = {(k, c): n for k, pairs in self._mentions_of(tx, sorted({k for k, _ in wanted_m})).items()
                    for c, n in pairs}
            rows = [{"key": k, "chunk_id": c, "count": n} for (k, c), n in wanted_m.items()
                    if c in stored and n > have.get((k, c), 0)]
            self._run.rows(tx, "aliases_mentions_set", rows=rows)
            weights = {}
            for key in sorted({e[0] for e in wanted_r}):
                weights.update(self._relations(tx, key))
            self._run.rows(tx, "aliases_relations_set", rows=[
                _relation_dict(e, w) for e, w in wanted_r.items() if e[3] in stored and w > weights.get(e, 0.0)])
            return len(rows)

        return self._run.write("add mentions", work)

    def record_audit(self, entry: AuditEntry) -> None:
        try:
            details = json.dumps(entry.details, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"record audit: details are not JSON-serializable: {exc}") from exc
        self._run.write("record audit", lambda tx: self._run.rows(
            tx, "aliases_audit_create", seq=time.time_ns(), at=entry.at, who=entry.who, action=entry.action,
            target=entry.target, details=details))

    # -- steps (inside a transaction) --------------------------------------------------------
    def _entity(self, tx, key: str) -> dict[str, Any] | None:
        rows = self._run.rows(tx, "aliases_entity", key=key)
        if not rows:
            return None
        row = rows[0]
        row["aliases"], row["alias_keys"] = list(row["aliases"] or []), list(row["alias_keys"] or [])
        return row

    def _require(self, tx, key: str) -> dict[str, Any]:
        entity = self._entity(tx, key)
        if entity is None:
            raise StoreError(f"no entity keyed {key!r}")
        return entity

    def _append_aliases(self, tx, entity: dict[str, Any], surfaces: Sequence[str]) -> list[str]:
        have = set(entity["alias_keys"])
        added = []
        for pair in _alias_pairs(surfaces):
            if pair["normalized"] not in have:
                have.add(pair["normalized"])
                added.append(pair["surface"])
        if added:
            self._run.rows(tx, "aliases_add", key=entity["key"], aliases=_alias_pairs(added))
        return added

    def _drop_aliases(self, tx, entity: dict[str, Any], normalized: set[str]) -> None:
        kept = [(s, n) for s, n in zip(entity["aliases"], entity["alias_keys"]) if n not in normalized]
        self._run.rows(tx, "aliases_replace", key=entity["key"], surfaces=[s for s, _ in kept],
                       alias_keys=[n for _, n in kept])
        self._run.rows(tx, "aliases_unlink", key=entity["key"], alias_keys=sorted(normalized))
        self._run.rows(tx, "aliases_prune", alias_keys=sorted(normalized))

    def _mentions_of(self, tx, keys: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
        out: dict[str, list[tuple[str, int]]] = {}
        for r in self._run.rows(tx, "mentions_of", keys=list(keys)):
            out.setdefault(r["key"], []).append((r["chunk_id"], int(r["count"])))
        return out

    def _mentions(self, tx, key: str) -> dict[str, int]:
        return dict(self._mentions_of(tx, [key]).get(key, []))

    def _relations(self, tx, key: str) -> dict[Edge, float]:
        """Every relation evidence row touching ``key``."""
        rows = self._run.rows(tx, "aliases_relations_out", key=key) + self._run.rows(tx, "aliases_relations_in", key=key)
        return {(r["source"], r["target"], r["type"], r["chunk_id"]): float(r["weight"]) for r in rows}

    def _move(self, tx, old: dict[str, Any], new_key: str) -> None:
        """Everything of ``old`` onto ``new_key`` (which exists), then ``old`` is gone."""
        key = old["key"]
        self._append_aliases(tx, self._require(tx, new_key), old["aliases"])
        have = self._mentions(tx, new_key)
        self._run.rows(tx, "aliases_mentions_set", rows=[
            {"key": new_key, "chunk_id": c, "count": have.get(c, 0) + n} for c, n in self._mentions(tx, key).items()])
        weights = self._relations(tx, new_key)
        moved: dict[Edge, float] = {}
        for (s, t, rel_type, chunk_id), w in self._relations(tx, key).items():
            edge = _edge(new_key if s == key else s, new_key if t == key else t, rel_type, chunk_id)
            if edge[0] != edge[1]:
                moved[edge] = moved.get(edge, weights.get(edge, 0.0)) + w
        self._run.rows(tx, "entities_delete", keys=[key])  # DETACH: its mentions and relations go too
        self._run.rows(tx, "aliases_relations_set", rows=[_relation_dict(e, w) for e, w in moved.items()])
        self._run.rows(tx, "aliases_prune", alias_keys=old["alias_keys"])

    def _reattribute(self, tx, key: str, other: str, new_key: str, rel_type: str, chunk_id: str, weight: float) -> float:
        """Evidence with an entity still merged into ``key``: its record learns it is evidence
        with ``new_key`` (``alias_provenance.reattribute``); returns the weight moved."""
        records = [r for r in self._run.rows(tx, "aliases_merge_records_of", key=key) if r["drop_key"] == other]
        if not records:
            return 0.0  # merged somewhere else, or deleted: nothing to attribute it to
        record = records[-1]
        rows, moved = reattribute(json.loads(record["relations"]), key, other, new_key, rel_type, chunk_id, weight)
        self._run.rows(tx, "aliases_merge_record_update", key=key, seq=record["seq"],
                       relations=json.dumps(rows, ensure_ascii=False))
        return moved

    def _restore(self, tx, key: str, new_key: str, drop_key: str, mentions: list, relations: list) -> None:
        """Undo one recorded merge (see ``SqliteAliasAdmin`` for the rules; same arithmetic)."""
        have = self._mentions(tx, key)
        have_new = self._mentions(tx, new_key)
        set_rows, unset_rows = [], []
        for chunk_id, count in mentions:
            if chunk_id not in have:
                continue
            taken = min(int(count), have[chunk_id])
            if taken == have[chunk_id]:
                unset_rows.append({"key": key, "chunk_id": chunk_id})
            else:
                set_rows.append({"key": key, "chunk_id": chunk_id, "count": have[chunk_id] - taken})
            set_rows.append({"key": new_key, "chunk_id": chunk_id, "count": have_new.get(chunk_id, 0) + taken})
        self._run.rows(tx, "aliases_mentions_unset", rows=unset_rows)
        self._run.rows(tx, "aliases_mentions_set", rows=set_rows)

        weights = self._relations(tx, key)
        weights_new = self._relations(tx, new_key)
        back_rows: dict[Edge, float] = {}
        changed: dict[Edge, float] = {}
        known_chunks = {r["id"] for r in self._run.rows(
            tx, "aliases_chunks_known", chunk_ids=sorted({row[3] for row in relations}))}
        for source, target, rel_type, chunk_id, weight in relations:
            other = target if source == drop_key else source
            back = _edge(new_key if source == drop_key else source, new_key if target == drop_key else target,
                         rel_type, chunk_id)
            if other == key:
                if chunk_id in known_chunks:
                    back_rows[back] = back_rows.get(back, weights_new.get(back, 0.0)) + float(weight)
                continue
            if self._entity(tx, other) is None:
                moved = self._reattribute(tx, key, other, new_key, rel_type, chunk_id, float(weight))
                if moved > EPSILON and chunk_id in known_chunks:
                    edge = _edge(new_key, key, rel_type, chunk_id)
                    back_rows[edge] = back_rows.get(edge, weights_new.get(edge, 0.0)) + moved
                continue
            merged = _edge(key if source == drop_key else source, key if target == drop_key else target, rel_type, chunk_id)
            current = changed.get(merged, weights.get(merged))
            if current is None:
                continue
            taken = min(float(weight), current)
            changed[merged] = current - taken
            if back[0] != back[1]:  # both ends restored into one entity: the evidence is gone, as in a merge
                back_rows[back] = back_rows.get(back, weights_new.get(back, 0.0)) + taken
        self._run.rows(tx, "aliases_relations_unset", rows=[_relation_dict(e, 0.0) for e, w in changed.items() if w <= EPSILON])
        self._run.rows(tx, "aliases_relations_set", rows=[
            *(_relation_dict(e, w) for e, w in changed.items() if w > EPSILON),
            *(_relation_dict(e, w) for e, w in back_rows.items())])


def _relation_dict(edge: Edge, weight: float) -> dict[str, Any]:
    source, target, rel_type, chunk_id = edge
    return {"source": source, "target": target, "type": rel_type, "chunk_id": chunk_id, "weight": weight}
