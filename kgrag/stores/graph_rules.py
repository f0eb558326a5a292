"""Rules every graph store follows, written once (no engine here): how relation evidence is
keyed, what a document write may contain, how a rename or split names its new entity.

Validation runs before a store opens a transaction, so both engines refuse the same input
with the same words (``StoreError``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from kgrag.errors import StoreError
from kgrag.text.normalize import normalize_alias
from kgrag.types import Chunk, Document, Entity, Mention, Relation

# Relation types without a direction: stored once per pair, with source key < target key, so
# (a, b) and (b, a) land on one edge. Other types keep their direction.
UNDIRECTED_RELATION_TYPES = frozenset({"CO_OCCURS"})
# Characters of chunk text a graph keeps (its chunk node's preview; the text lives in the
# chunk index).
PREVIEW_CHARS = 200


def ordered(source: str, target: str, rel_type: str) -> tuple[str, str]:
    """(source, target) as stored: undirected relation types with source < target."""
    if rel_type in UNDIRECTED_RELATION_TYPES and target < source:
        return target, source
    return source, target


# -- a document write ------------------------------------------------------------------------
def check_chunks(what: str, doc: Document, chunks: Sequence[Chunk]) -> set[str]:
    """The chunk ids of a document write; each chunk must be the document's, and appear once."""
    ids: set[str] = set()
    for c in chunks:
        if c.doc_id != doc.id:
            raise StoreError(f"{what}: chunk {c.id!r} belongs to document {c.doc_id!r}")
        if c.id in ids:
            raise StoreError(f"{what}: chunk id {c.id!r} appears twice")
        ids.add(c.id)
    return ids


def check_entity_keys(entities: Iterable[Entity]) -> None:
    for e in entities:
        if not isinstance(e.key, str) or not e.key:
            raise StoreError(f"entity {e.name!r}: key must be a non-empty string, got {e.key!r}")


def mention_rows(what: str, mentions: Sequence[Mention], chunk_ids: set[str]) -> list[tuple[str, str, int]]:
    """(entity key, chunk id, count) per mention; each must name one of the document's chunks
    and count at least one."""
    for m in mentions:
        if m.chunk_id not in chunk_ids:
            raise StoreError(
                f"{what}: mention of {m.entity_key!r} references chunk {m.chunk_id!r}, "
                "not one of this document's chunks"
            )
        if m.count < 1:
            raise StoreError(f"{what}: mention of {m.entity_key!r} in {m.chunk_id!r} has count {m.count}")
    return [(m.entity_key, m.chunk_id, int(m.count)) for m in mentions]


def relation_rows(what: str, relations: Sequence[Relation], chunk_ids: set[str]) -> list[tuple[str, str, str, str, float]]:
    """(source, target, type, chunk id, weight) per relation, undirected types ordered; each
    must name one of the document's chunks and weigh a finite, non-negative amount."""
    rows = []
    for r in relations:
        label = f"relation {r.source_key!r} -[{r.type}]- {r.target_key!r}"
        if r.chunk_id not in chunk_ids:
            raise StoreError(f"{what}: {label} references chunk {r.chunk_id!r}, not one of this document's chunks")
        if not math.isfinite(r.weight) or r.weight < 0:
            raise StoreError(f"{what}: {label} has weight {r.weight}")
        rows.append((*ordered(r.source_key, r.target_key, r.type), r.type, r.chunk_id, float(r.weight)))
    return rows


# -- alias administration: argument checks ---------------------------------------------------
def new_entity_key(what: str, new_name: str | None) -> str:
    """The key a rename or split gives the entity named ``new_name``; refused when the name has
    nothing a key can be made of."""
    new_key = normalize_alias(new_name or "")
    if not new_key:
        raise StoreError(f"{what}: new name {new_name!r} has no letters or digits")
    return new_key


def removable_aliases(key: str, aliases: Iterable[str]) -> set[str]:
    """The normalized aliases ``remove_aliases`` takes off ``key``; its own name is refused (the
    key is made of it: rename instead)."""
    wanted = {normalize_alias(a or "") for a in aliases} - {""}
    if key in wanted:
        raise StoreError(f"remove aliases of {key!r}: {key!r} is the entity's own name; rename it instead")
    return wanted


def merge_drops(keep: str, drop: Iterable[str]) -> list[str]:
    """The entities a merge folds into ``keep``, each once, in order; ``keep`` itself is refused."""
    drops = list(dict.fromkeys(drop))
    if keep in drops:
        raise StoreError(f"merge into {keep!r}: an entity cannot be merged into itself")
    return drops


def split_key(key: str, new_name: str | None) -> tuple[str, str]:
    """(what, new key) for splitting ``new_name`` off entity ``key``, checked."""
    what = f"split {key!r}"
    new_key = new_entity_key(what, new_name)
    if new_key == key:
        raise StoreError(f"{what}: the new entity cannot take the entity's own name")
    return what, new_key


def split_aliases(what: str, key: str, new_key: str, aliases: Iterable[str], owned: dict[str, str]) -> dict[str, str]:
    """normalized → stored surface of the aliases a split takes from ``key`` (``owned``: its
    aliases, normalized → surface); every one must be ``key``'s, and the new entity's own name
    goes with them when ``key`` had it as an alias."""
    moving: dict[str, str] = {}
    for alias in aliases:
        normalized = normalize_alias(alias or "")
        if normalized == key:
            raise StoreError(f"{what}: {alias!r} is the entity's own name and stays with it")
        if normalized not in owned:
            raise StoreError(f"{what}: {alias!r} is not an alias of {key!r}")
        moving[normalized] = owned[normalized]
    if new_key in owned:
        moving.setdefault(new_key, owned[new_key])
    return moving


def check_added_mentions(mentions: Sequence[Mention]) -> None:
    """Late linking (``add_mentions``) adds mentions of at least one."""
    for m in mentions:
        if m.count < 1:
            raise StoreError(f"add mentions: mention of {m.entity_key!r} in {m.chunk_id!r} has count {m.count}")
