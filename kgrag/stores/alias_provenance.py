"""Merge provenance arithmetic and argument checks shared by both graph stores' alias
administration.

A merge record keeps the dropped entity's own relation evidence as rows
``[source, target, type, chunk_id, weight]``. Splits unwind merges; done out of order (the
first of two entities merged into one is split off first), evidence between two merged
entities must be re-attributed, which is what ``reattribute`` does to the other's record.
"""

from __future__ import annotations

from kgrag.lexicon.normalize import normalize_alias
from kgrag.stores.base import StoreError
from kgrag.stores.sqlite_graph_writes import UNDIRECTED_RELATION_TYPES

EPSILON = 1e-9


def new_entity_key(what: str, new_name: str | None) -> str:
    """The key a rename or split gives the entity named ``new_name``; refused when the name has
    nothing a key can be made of."""
    new_key = normalize_alias(new_name or "")
    if not new_key:
        raise StoreError(f"{what}: new name {new_name!r} has no letters or digits")
    return new_key


def split_key(key: str, new_name: str | None) -> tuple[str, str]:
    """(what, new key) for splitting ``new_name`` off entity ``key``, checked."""
    what = f"split {key!r}"
    new_key = new_entity_key(what, new_name)
    if new_key == key:
        raise StoreError(f"{what}: the new entity cannot take the entity's own name")
    return what, new_key


def split_aliases(what: str, key: str, new_key: str, aliases, owned: dict[str, str]) -> dict[str, str]:
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


def ordered(source: str, target: str, rel_type: str) -> tuple[str, str]:
    """Undirected relation types are stored with source < target (as every store does)."""
    if rel_type in UNDIRECTED_RELATION_TYPES and target < source:
        return target, source
    return source, target


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
