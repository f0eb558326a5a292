"""Merge and split of entities as pure arithmetic over rows, for every graph store.

An adapter reads the rows an operation touches (``Evidence``: mention counts and relation
evidence of the entities involved; for a split, the merge records), calls ``plan_move`` or
``plan_split``, and writes the returned ``EvidenceDiff`` and record changes. Nothing here
touches a store, so both engines compute the same numbers from the same rows.

Rules (the alias contract suite, ``tests/contract/test_alias_contract.py``, holds every store
to them):

* move (merge, rename): the old entity's mention counts add to the new one's per chunk, its
  relation evidence is re-pointed to the new entity and adds to evidence already there;
  evidence that would join the entity to itself is dropped;
* merge records: a merge keeps the dropped entity's own mentions ``[chunk_id, count]`` and
  relation evidence ``[source, target, type, chunk_id, weight]`` (``merge_record``);
* split: each record restored takes its counts and weights back off the kept entity (never
  below zero) and gives them to the new one; evidence between the two, dropped by the merge,
  comes back while its chunk exists. Splits out of merge order re-attribute evidence held in
  another entity's record (``reattribute``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgrag.stores.graph_rules import ordered
from kgrag.text.normalize import normalize_alias

EPSILON = 1e-9

# (source key, target key, relation type, chunk id); undirected types ordered (graph_rules).
Edge = tuple[str, str, str, str]
MentionKey = tuple[str, str]  # (entity key, chunk id)


def edge(source: str, target: str, rel_type: str, chunk_id: str) -> Edge:
    return (*ordered(source, target, rel_type), rel_type, chunk_id)


def new_aliases(have: Iterable[str], surfaces: Sequence[str]) -> list[tuple[str, str]]:
    """(surface, normalized) of ``surfaces`` to append to an entity whose normalized aliases are
    ``have``: in order, none twice, none it already has, none without letters or digits."""
    seen = set(have)
    out = []
    for surface in surfaces:
        normalized = normalize_alias(surface or "")
        if normalized and normalized not in seen:
            seen.add(normalized)
            out.append((surface, normalized))
    return out


@dataclass
class Evidence:
    """Rows read from a store: mention counts and relation evidence of the entities an
    operation touches (every row touching any of them)."""

    mentions: dict[MentionKey, int] = field(default_factory=dict)
    relations: dict[Edge, float] = field(default_factory=dict)

    def copy(self) -> Evidence:
        return Evidence(dict(self.mentions), dict(self.relations))


@dataclass
class EvidenceDiff:
    """What to write: rows to delete, then rows to set to the given values (insert or update)."""

    mentions_unset: list[MentionKey] = field(default_factory=list)
    mentions_set: dict[MentionKey, int] = field(default_factory=dict)
    relations_unset: list[Edge] = field(default_factory=list)
    relations_set: dict[Edge, float] = field(default_factory=dict)


def diff(before: Evidence, after: Evidence) -> EvidenceDiff:
    """Rows that differ between two states: gone (unset) and new or changed (set)."""
    return EvidenceDiff(
        mentions_unset=[k for k in before.mentions if k not in after.mentions],
        mentions_set={k: n for k, n in after.mentions.items() if before.mentions.get(k) != n},
        relations_unset=[e for e in before.relations if e not in after.relations],
        relations_set={e: w for e, w in after.relations.items() if before.relations.get(e) != w},
    )


# -- move (merge, rename) ---------------------------------------------------------------------
def move(state: Evidence, old: str, new: str) -> None:
    """Everything of ``old`` onto ``new`` in ``state`` (which holds every row of both)."""
    for (key, chunk_id), count in list(state.mentions.items()):
        if key == old:
            del state.mentions[(key, chunk_id)]
            state.mentions[(new, chunk_id)] = state.mentions.get((new, chunk_id), 0) + count
    moved: list[tuple[Edge, float]] = []
    for e, weight in list(state.relations.items()):
        if old in e[:2]:
            del state.relations[e]
            moved.append((edge(new if e[0] == old else e[0], new if e[1] == old else e[1], e[2], e[3]), weight))
    for e, weight in moved:
        if e[0] != e[1]:
            state.relations[e] = state.relations.get(e, 0.0) + weight


def plan_move(rows: Evidence, old: str, new: str) -> EvidenceDiff:
    """The writes that move ``old`` onto ``new``, from every row of both (see ``move``)."""
    after = rows.copy()
    move(after, old, new)
    return diff(rows, after)


def merge_record(entity: Mapping[str, Any], rows: Evidence) -> dict[str, str]:
    """The provenance of merging ``entity`` (key, name, type, curated, aliases) away, as the
    JSON texts a store keeps: the entity, its own mentions and its own relation evidence."""
    key = entity["key"]
    mentions = sorted([c, n] for (k, c), n in rows.mentions.items() if k == key)
    relations = sorted(([*e, w] for e, w in rows.relations.items() if key in e[:2]),
                       key=lambda r: (r[3], r[0], r[1], r[2]))
    record = {k: entity[k] for k in ("key", "name", "type", "curated", "aliases")}
    return {"entity": json.dumps(record, ensure_ascii=False), "mentions": json.dumps(mentions, ensure_ascii=False),
            "relations": json.dumps(relations, ensure_ascii=False)}


# -- split --------------------------------------------------------------------------------------
@dataclass
class MergeRecord:
    """One stored merge record of the entity being split (``id``: its order among them)."""

    id: Any
    drop_key: str
    entity: dict[str, Any]
    mentions: list[list]
    relations: list[list]

    @classmethod
    def from_json(cls, id: Any, drop_key: str, entity: str, mentions: str, relations: str) -> MergeRecord:
        return cls(id, drop_key, json.loads(entity), json.loads(mentions), json.loads(relations))


@dataclass
class SplitPlan:
    """What a split writes besides moving aliases: the evidence diff, the type of the new
    entity, the records restored (delete them), records whose relations were re-attributed
    (id → rows, as JSON text), and entities whose own records now belong to the new key."""

    entity_type: str
    evidence: EvidenceDiff
    restored: list[Any]
    rewritten: dict[Any, str]
    repoint: list[str]


def records_to_restore(records: Sequence[MergeRecord], new_key: str, moving: Iterable[str]) -> list[MergeRecord]:
    """The records a split restores: the new entity's own, and those of the aliases it takes."""
    taken = set(moving)
    return [r for r in records if r.drop_key == new_key or r.drop_key in taken]


def plan_split(key: str, new_key: str, old_type: str, moving: Iterable[str], records: Sequence[MergeRecord],
               rows: Evidence, entities: set[str], chunks: set[str]) -> SplitPlan:
    """A split of ``new_key`` off ``key``, which takes the aliases ``moving`` (normalized).

    ``records``: every merge record kept by ``key``, oldest first; ``rows``: every mention and
    relation evidence row of ``key`` and ``new_key``; ``entities``: which entity keys named in
    the records exist (``new_key`` among them); ``chunks``: which chunk ids named in the
    records' relation evidence the graph still holds."""
    restoring = records_to_restore(records, new_key, moving)
    pending = {r.id: r for r in records}
    state = rows.copy()
    rewritten: dict[Any, list[list]] = {}
    for record in restoring:
        _restore(state, key, new_key, pending.pop(record.id), pending, rewritten, entities, chunks)
    return SplitPlan(
        entity_type=restoring[0].entity["type"] if restoring else old_type,
        evidence=diff(rows, state),
        restored=[r.id for r in restoring],
        rewritten={i: json.dumps(rows_, ensure_ascii=False) for i, rows_ in rewritten.items() if i in pending},
        repoint=[r.drop_key for r in restoring if r.drop_key != new_key],
    )


def _restore(state: Evidence, key: str, new_key: str, record: MergeRecord, pending: dict[Any, MergeRecord],
             rewritten: dict[Any, list[list]], entities: set[str], chunks: set[str]) -> None:
    """Undo one recorded merge of ``record.drop_key`` into ``key``, the restored entity now
    keyed ``new_key``: its mention counts and relation weights come off ``key`` (never below
    zero) and go to ``new_key``. Evidence between the two (dropped by the merge) comes back as
    it was. Restored weights are added once the record is done."""
    drop_key = record.drop_key
    for chunk_id, count in record.mentions:
        have = state.mentions.get((key, chunk_id))
        if have is None:
            continue  # the chunk is gone, or re-ingested under other counts
        moved_count = min(int(count), have)
        if moved_count == have:
            del state.mentions[(key, chunk_id)]
        else:
            state.mentions[(key, chunk_id)] = have - moved_count
        state.mentions[(new_key, chunk_id)] = state.mentions.get((new_key, chunk_id), 0) + moved_count
    restored: list[tuple[Edge, float]] = []
    for source, target, rel_type, chunk_id, weight in record.relations:
        other = target if source == drop_key else source
        back = edge(new_key if source == drop_key else source, new_key if target == drop_key else target,
                    rel_type, chunk_id)
        if other == key:  # dropped by the merge: comes back if its chunk is still there
            if chunk_id in chunks:
                restored.append((back, float(weight)))
            continue
        if other not in entities:
            moved = _reattribute(pending, rewritten, key, other, new_key, rel_type, chunk_id, float(weight))
            if moved > EPSILON and chunk_id in chunks:
                restored.append((edge(new_key, key, rel_type, chunk_id), moved))
            continue
        merged = edge(key if source == drop_key else source, key if target == drop_key else target, rel_type, chunk_id)
        current = state.relations.get(merged)
        if current is None:
            continue
        taken = min(float(weight), current)
        if current - taken <= EPSILON:
            del state.relations[merged]
        else:
            state.relations[merged] = current - taken
        if back[0] != back[1]:  # both ends restored into one entity: the evidence is gone, as in a merge
            restored.append((back, taken))
    for e, weight in restored:
        state.relations[e] = state.relations.get(e, 0.0) + weight


def _reattribute(pending: dict[Any, MergeRecord], rewritten: dict[Any, list[list]], key: str, other: str,
                 new_key: str, rel_type: str, chunk_id: str, weight: float) -> float:
    """Evidence with an entity that is itself still merged into ``key`` (splits out of merge
    order): its latest record learns it is evidence with ``new_key`` (``reattribute``);
    returns the weight moved (0 when ``other`` was merged elsewhere or deleted)."""
    record = next((r for r in reversed(pending.values()) if r.drop_key == other), None)
    if record is None:
        return 0.0
    record.relations, moved = reattribute(record.relations, key, other, new_key, rel_type, chunk_id, weight)
    rewritten[record.id] = record.relations
    return moved


def reattribute(rows: list[list], key: str, other: str, new_key: str, rel_type: str, chunk_id: str,
                weight: float) -> tuple[list[list], float]:
    """``other`` is still merged into ``key`` while ``new_key`` was just split off ``key``, and
    ``new_key`` had ``weight`` of evidence with ``other`` in ``chunk_id``. That evidence went
    into ``other``'s record as evidence with ``key`` when ``other`` was merged; it now belongs
    to ``new_key``. Returns the rewritten rows and the weight moved (the store restores that
    much as evidence between ``new_key`` and ``key``, where ``other`` lives for now)."""
    out: list[list] = []
    remaining = float(weight)
    for source, target, row_type, row_chunk, row_weight in rows:
        if (remaining > EPSILON and row_type == rel_type and row_chunk == chunk_id
                and {source, target} == {other, key}):
            taken = min(float(row_weight), remaining)
            remaining -= taken
            row_weight = float(row_weight) - taken
            if row_weight <= EPSILON:
                continue
        out.append([source, target, row_type, row_chunk, row_weight])
    moved = float(weight) - remaining
    if moved > EPSILON:
        out.append([*ordered(other, new_key, rel_type), rel_type, chunk_id, moved])
    return out, moved
