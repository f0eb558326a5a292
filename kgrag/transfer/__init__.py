"""Move a knowledge base between store kinds (embedded SQLite ⇄ Neo4j / Elasticsearch) without
re-embedding or re-extracting.

``plan`` parses what goes where, ``copy`` moves and verifies it, ``cli`` is ``kgrag transfer``.
The names below are imported on first use, so registering the CLI command keeps every
``kgrag`` command quick to start.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "TransferError": "plan", "TransferPlan": "plan", "parse_kinds": "plan", "plan_transfer": "plan",
    "HalfReport": "copy", "TransferReport": "copy", "run_transfer": "copy", "transfer_chunks": "copy",
    "transfer_graph": "copy",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kgrag.transfer' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"kgrag.transfer.{module}"), name)
