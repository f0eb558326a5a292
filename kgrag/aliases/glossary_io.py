"""``import`` / ``export`` of curated entities in the glossary format ingestion reads
(``kgrag.lexicon.glossary``: CSV ``canonical,type,aliases`` with aliases joined by ``|``; import
also takes the YAML and line formats).

Export writes every curated entity (``every``: also extracted entities that have aliases
besides their name), aliases in stored order, the canonical name not repeated among them.
Import is additive, keyed by canonical name, with the ``add`` policy (conflicts refused
unless forced, extracted entities of an alias's name absorbed, new names linked in place),
validated as a whole first: one bad line changes nothing; the rows, the linking and the audit
entry are then written as one transaction where the store has them (the embedded one). Exporting, importing the file into
an empty knowledge base and exporting again gives the same bytes; importing an export back
into its own knowledge base changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kgrag.aliases.linking import plan_links
from kgrag.aliases.service import AliasError, AliasService, Change, clean_name
from kgrag.lexicon.gazetteer import Gazetteer
from kgrag.lexicon.glossary import GlossaryError, load_glossary, write_glossary_csv
from kgrag.text.normalize import normalize_alias
from kgrag.types import Entity

CHECK_STEP = 1000  # rows checked between progress reports


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


ImportProgress = Callable[[str, int, int], None]
"""Called as an import goes: (stage, done, total); stages "checking" (rows), "linking"
(chunks examined), "writing", "done"."""


def import_glossary(service: AliasService, path: str | Path, *, force: bool = False, label: str | None = None,
                    progress: ImportProgress | None = None) -> Change:
    """Time linear in the rows (one gazetteer for the whole import, one pass of linking); on a
    store that can (``Transactional``), one transaction with its audit entry: all rows or none."""
    say = progress or (lambda stage, done, total: None)
    graph = service.graph
    source = label or str(path)
    try:
        entries = load_glossary(path)
    except GlossaryError as exc:
        raise AliasError("invalid", str(exc)) from None
    if not entries:
        raise AliasError("invalid", f"glossary {source} has no entries")
    for e in entries:
        clean_name(e.name, f"canonical name (in {source})")
        for alias in e.aliases:
            clean_name(alias, f"alias of {e.name!r} (in {source})")
    incoming = {e.key: e for e in entries}
    plans, conflicts = [], []
    for done, e in enumerate(entries):
        if done % CHECK_STEP == 0:
            say("checking", done, len(entries))
        existing = graph.get_entity(e.key)
        have = {normalize_alias(a) for a in (existing.aliases if existing else [e.name])}
        new, absorb, problems = service.plan_aliases(e.key, have, e.aliases, force, incoming)
        conflicts += [f"{e.name!r}: {p}" for p in problems]
        plans.append((e, existing, new, absorb))
    say("checking", len(entries), len(entries))
    if conflicts:
        raise AliasError("conflict", "; ".join(conflicts) + " (nothing was changed)")
    if all(existing is not None and existing.curated and not new and not absorb for _, existing, new, absorb in plans):
        return Change("import", source, False, f"every entry of {source} is already there",
                      {"entities": len(entries)})

    # The alias table as it will be once the import is written, for linking: every entry's
    # names, and the aliases of the extracted entities it absorbs under its key.
    gazetteer = Gazetteer(graph.alias_table())
    absorbed: dict[str, str] = {}  # extracted entity → the entry it is merged into
    merges: dict[str, list[str]] = {}
    for e, _, _, absorb in plans:
        for name in (e.name, *e.aliases):
            gazetteer.add(name, e.key)
        todo = [k for k in dict.fromkeys(absorb) if k not in incoming and k not in absorbed]
        found = [(k, entity) for k in todo if (entity := graph.get_entity(k)) is not None]
        for k, entity in found:
            absorbed[k] = e.key
            for alias in entity.aliases:
                gazetteer.remove(alias, k)
                gazetteer.add(alias, e.key)
        if found:
            merges[e.key] = [k for k, _ in found]
    wanted = {e.key: ([e.name] if existing is None else []) + list(new.values()) for e, existing, new, _ in plans}
    links = plan_links(graph, service.chunk_index, wanted, gazetteer, renamed=absorbed,
                       max_entities_per_chunk=service.max_entities_per_chunk,
                       progress=lambda done, total: say("linking", done, total))

    created = [e.key for e, existing, _, _ in plans if existing is None]
    added = {e.key: list(new.values()) for e, _, new, _ in plans if new}
    linked = len({chunk for chunks in links.linked.values() for chunk in chunks})
    details = {"source": source, "entities": len(entries), "created": created, "added": added,
               "absorbed": merges, "linked_chunks": sum(len(chunks) for chunks in links.linked.values())}
    message = (f"imported {len(entries)} entries: {len(created)} created, aliases added to {len(added)}, "
               f"{sum(len(v) for v in merges.values())} extracted entities merged in, "
               f"{details['linked_chunks']} chunk mention(s) linked in {linked} chunk(s)")
    say("writing", 0, 0)
    with service.one_change():
        graph.upsert_entities(entries)  # curated; new entities created, new aliases added
        for key, todo in merges.items():
            graph.alias_admin.merge_entities(key, todo)
        if links.mentions:
            graph.alias_admin.add_mentions(links.mentions, links.relations)
        change = service.record_change("import", source, message, details)
    say("done", len(entries), len(entries))
    return change
