"""``import`` / ``export`` of curated entities in the glossary format ingestion reads
(``kgrag.lexicon.glossary``: CSV ``canonical,type,aliases`` with aliases joined by ``|``; import
also takes the YAML and line formats).

Export writes every curated entity (``every``: also extracted entities that have aliases
besides their name), aliases in stored order, the canonical name not repeated among them.
Import is additive, keyed by canonical name, with the ``add`` policy (conflicts refused
unless forced, extracted entities of an alias's name absorbed, new names linked in place),
validated as a whole first: one bad line changes nothing. Exporting, importing the file into
an empty knowledge base and exporting again gives the same bytes; importing an export back
into its own knowledge base changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgrag.aliases.service import AliasError, AliasService, Change, clean_name
from kgrag.lexicon.glossary import GlossaryError, load_glossary, write_glossary_csv
from kgrag.text.normalize import normalize_alias
from kgrag.types import Entity


def export_glossary(service: AliasService, path: str | Path, *, every: bool = False) -> dict[str, Any]:
    graph = service.graph
    if every:
        chosen = [e for e in graph.alias_admin.list_entities() if e.curated or any(normalize_alias(a) != e.key for a in e.aliases)]
    else:
        chosen = graph.curated_entities()
    rows = [Entity(e.key, e.name, e.type, [a for a in e.aliases if normalize_alias(a) != e.key], e.curated)
            for e in sorted(chosen, key=lambda e: e.key)]
    for e in rows:
        for alias in e.aliases:
            try:
                clean_name(alias, "alias")
            except AliasError as exc:
                raise AliasError("invalid", f"cannot export {e.key!r}: {exc}; rename or remove that alias") from None
    try:
        write_glossary_csv(rows, path)
    except (GlossaryError, OSError) as exc:
        raise AliasError("invalid", f"cannot write {path}: {exc}") from None
    return {"path": str(path), "entities": len(rows), "aliases": sum(len(e.aliases) for e in rows)}


def import_glossary(service: AliasService, path: str | Path, *, force: bool = False, label: str | None = None) -> Change:
    graph = service.graph
    try:
        entries = load_glossary(path)
    except GlossaryError as exc:
        raise AliasError("invalid", str(exc)) from None
    if not entries:
        raise AliasError("invalid", f"glossary {label or path} has no entries")
    for e in entries:
        clean_name(e.name, f"canonical name (in {label or path})")
        for alias in e.aliases:
            clean_name(alias, f"alias of {e.name!r} (in {label or path})")
    incoming = {e.key: e for e in entries}
    plans, conflicts = [], []
    for e in entries:
        existing = graph.get_entity(e.key)
        have = {normalize_alias(a) for a in (existing.aliases if existing else [e.name])}
        new, absorb, problems = service.plan_aliases(e.key, have, e.aliases, force, incoming)
        conflicts += [f"{e.name!r}: {p}" for p in problems]
        plans.append((e, existing, new, absorb))
    if conflicts:
        raise AliasError("conflict", "; ".join(conflicts) + " (nothing was changed)")
    if all(existing is not None and existing.curated and not new and not absorb for _, existing, new, absorb in plans):
        return Change("import", label or str(path), False, f"every entry of {label or path} is already there",
                      {"entities": len(entries)})

    graph.upsert_entities(entries)  # curated; new entities created, new aliases added
    created, added, absorbed, linked = [], {}, {}, 0
    for e, existing, new, absorb in plans:
        todo = [k for k in dict.fromkeys(absorb) if k not in incoming and graph.get_entity(k) is not None]
        if todo:
            graph.alias_admin.merge_entities(e.key, todo)
            absorbed[e.key] = todo
        if existing is None:
            created.append(e.key)
        if new:
            added[e.key] = list(new.values())
        names = ([e.name] if existing is None else []) + list(new.values())
        linked += len(service.link_names(e.key, names).linked_chunks or []) if names else 0
    details = {"source": label or str(path), "entities": len(entries), "created": created, "added": added,
               "absorbed": absorbed, "linked_chunks": linked}
    message = (f"imported {len(entries)} entries: {len(created)} created, aliases added to {len(added)}, "
               f"{sum(len(v) for v in absorbed.values())} extracted entities merged in, {linked} chunk(s) linked")
    return service.record_change("import", label or str(path), message, details)
