"""Read-only views for the alias admin: list, ambiguous aliases, one entity in detail."""

from __future__ import annotations

from typing import Any

from kgrag.aliases.service import AliasService
from kgrag.text.normalize import normalize_alias
from kgrag.types import Entity


def entity_dict(entity: Entity, chunks: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"key": entity.key, "name": entity.name, "type": entity.type,
                           "curated": entity.curated,
                           "aliases": [a for a in entity.aliases if normalize_alias(a) != entity.key]}
    if chunks is not None:
        out["chunks"] = chunks
    return out


def list_entities(service: AliasService, *, entity: str | None = None, every: bool = False,
                  limit: int = 100, offset: int = 0) -> dict[str, Any]:
    """Entities with aliases besides their name, and every curated one (``every``: all)."""
    graph = service.graph
    if entity is not None:
        found = [service.resolve(entity)]
        total = 1
    else:
        found = [e for e in graph.alias_admin.list_entities()
                 if every or e.curated or any(normalize_alias(a) != e.key for a in e.aliases)]
        total = len(found)
        found = found[offset: offset + limit]
    counts = graph.entity_chunk_counts([e.key for e in found])
    return {"entities": [entity_dict(e, counts.get(e.key, 0)) for e in found], "total": total,
            "offset": 0 if entity else offset}


def ambiguous_aliases(service: AliasService) -> list[dict[str, Any]]:
    """Aliases claimed by more than one entity, with every candidate."""
    graph = service.graph
    table = {alias: keys for alias, keys in graph.alias_table().items() if len(keys) > 1}
    keys = sorted({k for ks in table.values() for k in ks})
    counts = graph.entity_chunk_counts(keys)
    names = {k: (e.name if (e := graph.get_entity(k)) else k) for k in keys}
    return [
        {"alias": alias, "candidates": [{"key": k, "name": names[k], "chunks": counts.get(k, 0)} for k in sorted(ks)]}
        for alias, ks in sorted(table.items())
    ]


def show(service: AliasService, name: str, neighbours: int = 10) -> dict[str, Any]:
    graph = service.graph
    entity = service.resolve(name)
    mentions = graph.mentions_of([entity.key]).get(entity.key, [])
    around = graph.neighbors([entity.key], hops=1, limit=neighbours * 5 + 1)
    near: list[dict[str, Any]] = []
    for other in around:
        if other == entity.key:
            continue
        e = graph.get_entity(other)
        near.append({"key": other, "name": e.name if e else other, "weight": graph.relation_weight(entity.key, other)})
    near.sort(key=lambda n: (-n["weight"], n["key"]))
    shared = graph.lookup_aliases([normalize_alias(a) for a in entity.aliases])
    out = entity_dict(entity, len(mentions))
    out.update({
        "mentions": sum(count for _, count in mentions),
        "neighbours": near[:neighbours],
        "shared_aliases": {alias: sorted(k for k in keys if k != entity.key)
                           for alias, keys in shared.items() if len(keys) > 1},
    })
    return out
