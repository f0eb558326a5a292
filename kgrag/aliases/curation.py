"""What people decided about names, kept apart from the graph: every curated entity (name,
type, aliases) and the audit log, as one JSON document. Both live in the graph store, so a lost
graph file lost them (issue 47); a copy is kept beside the knowledge base
(``<data_dir>/curation.json``, rewritten after every alias change and every glossary ingest),
``kgrag aliases backup FILE`` writes one anywhere, and ``apply`` re-applies one (``kgrag
aliases restore FILE``, and ``kgrag check --repair`` after rebuilding a lost graph).

Applying is additive and idempotent: curated entities are created or given the aliases they
lack (``upsert_entities``), and audit entries the log lacks are appended in their order, with
their own time and author; applying a copy to the knowledge base it came from changes nothing.
"""

from __future__ import annotations

import json
import logging
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kgrag.atomic_files import written_whole
from kgrag.errors import InputError
from kgrag.stores.base import AliasGraph, AuditEntry, Transactional
from kgrag.types import Entity

log = logging.getLogger(__name__)

FILE = "curation.json"
VERSION = 1
ALL = 2**62  # "every entry" for AuditLog.audit_log


class CurationError(InputError):
    """A curation file that cannot be read or is not one."""


def snapshot(graph: AliasGraph) -> dict[str, Any]:
    """The curated entities (by key) and the audit log (oldest first)."""
    curated = sorted(graph.curated_entities(), key=lambda e: e.key)
    return {
        "version": VERSION,
        "curated": [{"key": e.key, "name": e.name, "type": e.type, "aliases": list(e.aliases)} for e in curated],
        "audit": [asdict(entry) for entry in reversed(graph.audit.audit_log(ALL))],
    }


def save(graph: AliasGraph, path: Path | str) -> dict[str, int]:
    data = snapshot(graph)
    with written_whole(Path(path)) as out:
        out.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return {"curated": len(data["curated"]), "audit": len(data["audit"])}


def keep_copy(graph: AliasGraph, data_dir: Path | str) -> None:
    """Rewrite the knowledge base's own copy; a failure is logged, never raised (the change it
    follows is done)."""
    try:
        save(graph, Path(data_dir) / FILE)
    except Exception:  # noqa: BLE001 - the copy is a safety net, not part of the change
        log.warning("could not keep a copy of the curated names and the audit log", exc_info=True)


def load(path: Path | str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CurationError(f"{path}: not a readable curation file: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("curated"), list) \
            or not isinstance(data.get("audit"), list):
        raise CurationError(f"{path}: not a curation file of version {VERSION} (curated, audit)")
    return data


def apply(graph: AliasGraph, data: dict[str, Any]) -> dict[str, int]:
    """Re-apply a snapshot: returns how many entities were created or given aliases, and how
    many audit entries were appended."""
    try:
        wanted = [Entity(c["key"], c["name"], c["type"], list(c["aliases"]), curated=True) for c in data["curated"]]
        entries = [AuditEntry(a["at"], a["who"], a["action"], a["target"], a.get("details") or {})
                   for a in data["audit"]]
    except (KeyError, TypeError) as exc:
        raise CurationError(f"a curation entry lacks a field: {exc}") from None
    have = {e.key: e for e in graph.curated_entities()}
    changed = [e for e in wanted if e.key not in have or set(e.aliases) - set(have[e.key].aliases)]
    logged = {_entry_key(a) for a in graph.audit.audit_log(ALL)}
    missing = [a for a in entries if _entry_key(a) not in logged]
    with graph.transaction() if isinstance(graph, Transactional) else nullcontext():
        if changed:
            graph.upsert_entities(changed)
        for entry in missing:
            graph.audit.record_audit(entry)
    return {"entities": len(changed), "audit_entries": len(missing)}


def _entry_key(entry: AuditEntry) -> str:
    return json.dumps([entry.at, entry.who, entry.action, entry.target, entry.details], sort_keys=True,
                      ensure_ascii=False)
