"""Records read from the Neo4j graph store as kgrag types (shared by the graph store and its
alias administration)."""

from __future__ import annotations

import json
from typing import Any

from kgrag.types import Document, Entity


def document_of(r: dict[str, Any]) -> Document:
    return Document(id=r["id"], source=r["source"] or "", title=r["title"] or "", hash=r["hash"] or "",
                    format=r["format"] or "txt", metadata=json.loads(r["metadata"] or "{}"))


def entity_of(r: dict[str, Any]) -> Entity:
    return Entity(key=r["key"], name=r["name"], type=r["type"], aliases=list(r["aliases"] or []),
                  curated=bool(r["curated"]))


def grouped(rows: list[dict[str, Any]], key: str, value: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(r[key], []).append(r[value])
    return out
