"""Row reads of the embedded graph store shared by its document side (``sqlite.graph``) and
its alias administration (``sqlite.aliases``); each runs on a connection the caller holds."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from kgrag.stores.merge_split import Evidence
from kgrag.stores.sqlite.db import IN_JSON, id_list
from kgrag.types import Entity


def load_entities(conn: sqlite3.Connection, keys: Sequence[str]) -> dict[str, Entity]:
    """Entities by key with their alias surface forms (in the order they were added)."""
    found = {
        key: Entity(key=key, name=name, type=etype, aliases=[], curated=bool(curated))
        for key, name, etype, curated in conn.execute(
            f"SELECT key, name, type, curated FROM entities WHERE key {IN_JSON}", (id_list(keys),)
        )
    }
    for key, surface in conn.execute(
        f"SELECT entity_key, surface FROM aliases WHERE entity_key {IN_JSON} ORDER BY rowid",
        (id_list(found),),
    ):
        found[key].aliases.append(surface)
    return found


def group_pairs(rows: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in rows:
        out.setdefault(key, []).append(value)
    return out


def existing_entities(conn: sqlite3.Connection, keys: Iterable[str]) -> set[str]:
    return {r[0] for r in conn.execute(f"SELECT key FROM entities WHERE key {IN_JSON}", (id_list(keys),))}


def existing_chunks(conn: sqlite3.Connection, chunk_ids: Iterable[str]) -> set[str]:
    return {r[0] for r in conn.execute(f"SELECT id FROM chunks WHERE id {IN_JSON}", (id_list(chunk_ids),))}


def evidence_of(conn: sqlite3.Connection, keys: Sequence[str]) -> Evidence:
    """Every mention and relation evidence row of the given entities."""
    ids = id_list(keys)
    mentions = conn.execute(f"SELECT entity_key, chunk_id, count FROM mentions WHERE entity_key {IN_JSON}", (ids,))
    relations = conn.execute(
        "SELECT source_key, target_key, type, chunk_id, weight FROM relation_evidence "
        f"WHERE source_key {IN_JSON} OR target_key {IN_JSON}", (ids, ids))
    return Evidence(
        mentions={(key, chunk_id): count for key, chunk_id, count in mentions},
        relations={(s, t, rel_type, c): w for s, t, rel_type, c, w in relations},
    )
