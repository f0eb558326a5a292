"""What a transfer moves where: store names parsed, source and target settings, halves that
would copy a store onto itself left out."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kgrag.config import CHUNK_STORE_KINDS, EMBEDDED, GRAPH_STORE_KINDS, Settings
from kgrag.errors import InputError
from kgrag.stores.factory import embedded_file, store_place

KINDS = sorted(set(GRAPH_STORE_KINDS) | set(CHUNK_STORE_KINDS))


class TransferError(InputError):
    """Bad transfer request (unknown store name, nothing to move); message says why."""


def parse_kinds(spec: str) -> tuple[str | None, str | None]:
    """``"neo4j,elasticsearch"`` → (graph kind, chunk kind). A server kind names the half it
    serves (``neo4j`` the graph, ``elasticsearch`` the chunks); ``sqlite`` names every half not
    otherwise named."""
    names = [n.strip().lower() for n in spec.split(",") if n.strip()]
    unknown = sorted(set(names) - set(KINDS))
    if not names or unknown:
        raise TransferError(f"unknown store name(s) {unknown or [spec]}: use a comma list of {KINDS}")
    return _half(names, GRAPH_STORE_KINDS), _half(names, CHUNK_STORE_KINDS)


def _half(names: list[str], kinds: tuple[str, ...]) -> str | None:
    servers = [n for n in names if n in kinds and n != EMBEDDED]
    return servers[0] if servers else EMBEDDED if EMBEDDED in names else None


@dataclass
class TransferPlan:
    source: Settings
    target: Settings
    graph: bool
    chunks: bool
    notes: list[str] = field(default_factory=list)


def plan_transfer(settings: Settings, to: str, *, source_kinds: str | None = None,
                  target_data_dir: Path | None = None) -> TransferPlan:
    """Source: ``settings`` (its store kinds, or ``source_kinds``); target: the kinds named by
    ``to``, with ``target_data_dir`` for an SQLite target (default: the same data dir)."""
    graph_to, chunks_to = parse_kinds(to)
    source = settings
    if source_kinds:
        graph_from, chunks_from = parse_kinds(source_kinds)
        source = settings.model_copy(update={k: v for k, v in (("graph_store", graph_from), ("chunk_store", chunks_from)) if v})
    update: dict[str, Any] = {k: v for k, v in (("graph_store", graph_to), ("chunk_store", chunks_to)) if v}
    if target_data_dir is not None:
        update["data_dir"] = target_data_dir
    target = settings.model_copy(update=update)
    halves: tuple[tuple[str, Literal["graph", "chunks"]], ...] = (
        (source.graph_store, "graph"), (source.chunk_store, "chunks"))
    for kind, half in halves:
        path = embedded_file(kind, half, source)
        if path is not None and not path.is_file():
            raise TransferError(f"no knowledge base to transfer: {path} does not exist")
    plan = TransferPlan(source, target, graph=graph_to is not None, chunks=chunks_to is not None)
    for half, attr in (("graph", "graph_store"), ("chunks", "chunk_store")):
        if getattr(plan, half) and store_place(getattr(source, attr), source) == store_place(getattr(target, attr), target):
            setattr(plan, half, False)
            plan.notes.append(f"{half}: source and target are the same {getattr(source, attr)} store; skipped")
    if not (plan.graph or plan.chunks):
        raise TransferError("nothing to transfer: " + ("; ".join(plan.notes) or "no store named"))
    return plan
