"""Alias administration: the operations behind ``kgrag aliases`` and ``/v1/entities/...``, with
their validation and policy. The graph store does the mechanics (``AliasAdmin.add_aliases``,
``merge_entities``, ...); everything decided here is written down below.

Names. Wherever an entity is named (CANONICAL, OLD, KEEP, ENTITY), its key, its canonical name
or any alias claimed by that entity alone will do; an alias claimed by several entities is
refused with the candidates listed (use a key). ``import`` is keyed by canonical name only,
as a glossary given to ``kgrag ingest`` is.

Policy.
* ``add CANONICAL ALIAS...`` creates CANONICAL as a curated entity (type CONCEPT unless told)
  when no entity has that name. An alias that is another entity's canonical name is refused
  when that entity is curated (a person defined it; ``force`` lets both claim the alias, and
  ``list --ambiguous`` then shows it). When that entity was only extracted by ingestion (not
  curated), the person has just said the two names mean the same thing: it is merged into
  CANONICAL (reported as ``absorbed``; ``split`` undoes it exactly).
* Every entity an operation creates or changes becomes curated: it survives the deletion of
  the documents that mention it, so a curation is never silently lost.
* Aliases must contain a letter or digit, no control character (NUL, ESC, a newline) and
  none of ``; ； |`` (they separate aliases in glossary files, so export stays lossless).
* Operations are idempotent: repeating one reports ``changed: false`` and writes nothing (no
  audit entry). Bad input raises AliasError before anything is written.
* ``rename`` keeps the old name as an alias (the old spelling still links); ``remove`` it if
  unwanted. ``remove`` stops an alias from linking (queries at once, ingestion from its next
  run); mentions already linked stay until their document is re-ingested.
* ``split`` moves mentions by merge provenance; an entity that was never merged gets its
  mentions by scanning chunk text for its aliases (the original keeps its own until a
  re-ingest).
* After ``add``/``rename``/``import``/``split``, chunks containing the new names are linked
  in place (``kgrag.aliases.linking``); nothing is re-embedded.
* Every change is appended to the audit log (who, when, what).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kgrag.aliases.linking import link_aliases
from kgrag.errors import InputError
from kgrag.stores.base import AliasGraph, AuditEntry, ChunkIndex, Transactional
from kgrag.text.checks import control_character
from kgrag.text.normalize import normalize_alias
from kgrag.types import CONCEPT, Entity

MAX_NAME_CHARS = 200
_SEPARATORS = re.compile(r"[;；|]")
_LETTER_OR_DIGIT = re.compile(r"[^\W_]")
# What ``clean_name`` accepts, as the API document states it (a pattern for Python's ``re``):
# a letter or digit, no control character, none of the separators.
NAME_PATTERN = r"^[^\x00-\x1f\x7f-\x9f;；|]*[^\W_][^\x00-\x1f\x7f-\x9f;；|]*$"


class AliasError(InputError):
    """Refused input; nothing was changed. ``code``: unknown_entity, ambiguous, conflict (the
    request does not fit what the graph holds now), invalid (it never could) — the HTTP API
    maps them to 404, 409, 409, 400."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


@dataclass
class Change:
    action: str
    target: str  # entity key the change is about
    changed: bool
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "target": self.target, "changed": self.changed,
                "message": self.message, **self.details}


def clean_name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise AliasError("invalid", f"{what} is empty")
    value = value.strip()
    if len(value) > MAX_NAME_CHARS:
        raise AliasError("invalid", f"{what} {value[:40]!r}... is longer than {MAX_NAME_CHARS} characters")
    if not _LETTER_OR_DIGIT.search(value) or not normalize_alias(value):
        raise AliasError("invalid", f"{what} {value!r} has no letters or digits")
    if (code := control_character(value)) is not None:
        raise AliasError("invalid", f"{what} {value!r} contains a control character ({code})")
    if _SEPARATORS.search(value):
        raise AliasError("invalid", f"{what} {value!r} contains ';', '；' or '|' (they separate aliases in glossary files)")
    return value


def clean_aliases(aliases: Sequence[Any]) -> list[str]:
    if not aliases:
        raise AliasError("invalid", "give at least one alias")
    return [clean_name(a, "alias") for a in aliases]


class AliasService:
    def __init__(self, graph: AliasGraph, chunk_index: ChunkIndex, *, user: str,
                 max_entities_per_chunk: int = 30, on_change: Callable[[], None] | None = None,
                 keep_copy_in: Path | None = None):
        """``keep_copy_in``: a data dir whose copy of the curated names and the audit log
        (``kgrag.aliases.curation``) is rewritten after every change."""
        self.graph = graph
        self.chunk_index = chunk_index
        self.user = user
        self.max_entities_per_chunk = max_entities_per_chunk
        self.on_change = on_change
        self.keep_copy_in = keep_copy_in
        self._changing = self._changed_inside = False

    @classmethod
    def from_components(cls, components, user: str, on_change: Callable[[], None] | None = None) -> AliasService:
        return cls(components.graph, components.chunk_index, user=user, on_change=on_change,
                   max_entities_per_chunk=components.settings.extraction.max_entities_per_chunk,
                   keep_copy_in=Path(components.settings.data_dir))

    # -- resolving names ---------------------------------------------------------------------
    def find(self, name: str) -> Entity | None:
        """The entity ``name`` denotes (key, canonical name, or an alias only it claims)."""
        if not isinstance(name, str) or not name.strip():
            raise AliasError("invalid", "entity name is empty")
        for key in dict.fromkeys((normalize_alias(name), name.strip())):
            if key and (entity := self.graph.get_entity(key)) is not None:
                return entity
        normalized = normalize_alias(name)
        claims = self.graph.lookup_aliases([normalized]).get(normalized, []) if normalized else []
        if len(claims) > 1:
            raise AliasError("ambiguous", f"{name!r} is an alias of several entities {sorted(claims)}; name one by its key")
        return self.graph.get_entity(claims[0]) if claims else None

    def resolve(self, name: str) -> Entity:
        entity = self.find(name)
        if entity is None:
            raise AliasError("unknown_entity", f"no entity named {name!r} (as key, name or alias); see 'kgrag aliases list'")
        return entity

    # -- changes -----------------------------------------------------------------------------
    def add(self, canonical: str, aliases: Sequence[str], *, force: bool = False, type: str | None = None) -> Change:
        canonical = clean_name(canonical, "canonical name")
        aliases = clean_aliases(aliases)
        target = self.find(canonical)
        key = target.key if target else normalize_alias(canonical)
        have = {normalize_alias(a) for a in (target.aliases if target else [canonical])}
        new, absorb, conflicts = self.plan_aliases(key, have, aliases, force)
        if conflicts:
            raise AliasError("conflict", "; ".join(conflicts) + " (nothing was changed)")
        if target is not None and not new and target.curated:
            return Change("add", key, False, f"{key!r} already has every one of these aliases")
        if target is None:
            self.graph.upsert_entities([Entity(key, canonical, (type or CONCEPT).strip() or CONCEPT, curated=True)])
        else:
            self._mark_curated(target)
        added = list(new.values())
        self.graph.alias_admin.add_aliases(key, added)  # first, so they keep the order given
        if absorb:
            self.graph.alias_admin.merge_entities(key, absorb)
        scan = ([canonical] if target is None else []) + list(new.values())
        link = self.link_names(key, scan)
        ambiguous = self._ambiguous(key, [*new, key])
        details = {"created": target is None, "aliases": added, "absorbed": absorb, "ambiguous": ambiguous,
                   "linking": link.to_dict()}
        parts = [f"created curated entity {key!r}" if target is None else f"entity {key!r}"]
        if added:
            parts.append(f"added aliases {added}")
        if absorb:
            parts.append(f"merged in extracted entities {absorb}")
        parts.append(f"linked {len(link.linked_chunks or [])} chunk(s)")
        if link.capped:
            parts.append("candidate search capped: chunks beyond it link on their next re-ingest")
        if ambiguous:
            parts.append(f"now ambiguous: {ambiguous}")
        return self.record_change("add", key, "; ".join(parts), details)

    def remove(self, canonical: str, aliases: Sequence[str]) -> Change:
        entity = self.resolve(canonical)
        aliases = clean_aliases(aliases)
        own = [a for a in aliases if normalize_alias(a) == entity.key]
        if own:
            raise AliasError("conflict", f"{own[0]!r} is the canonical name of {entity.key!r}; rename the entity instead")
        removed = self.graph.alias_admin.remove_aliases(entity.key, aliases)
        missing = [a for a in aliases if normalize_alias(a) not in {normalize_alias(r) for r in removed}]
        if not removed:
            return Change("remove", entity.key, False, f"{entity.key!r} has none of these aliases", {"not_found": missing})
        self._mark_curated(entity)
        return self.record_change("remove", entity.key, f"removed {removed} from {entity.key!r}",
                          {"aliases": removed, "not_found": missing})

    def rename(self, old: str, new: str) -> Change:
        entity = self.resolve(old)
        new = clean_name(new, "new name")
        new_key = normalize_alias(new)
        if new == entity.name:
            return Change("rename", entity.key, False, f"{entity.key!r} is already named {new!r}")
        if new_key != entity.key and (other := self.graph.get_entity(new_key)) is not None:
            raise AliasError("conflict", f"an entity named {other.name!r} ({other.key!r}) already exists; "
                                         f"merge them instead: kgrag aliases merge {other.key!r} {entity.key!r}")
        renamed = self.graph.alias_admin.rename_entity(entity.key, new)
        self._mark_curated(renamed)
        link = self.link_names(renamed.key, [new]) if new_key not in {normalize_alias(a) for a in entity.aliases} else None
        details = {"old_key": entity.key, "old_name": entity.name, "name": new,
                   "ambiguous": self._ambiguous(renamed.key, [renamed.key])}
        if link is not None:
            details["linking"] = link.to_dict()
        return self.record_change("rename", renamed.key, f"renamed {entity.key!r} to {new!r} (key {renamed.key!r}; "
                                                   f"the old name stays an alias)", details)

    def merge(self, keep: str, drop: Sequence[str]) -> Change:
        if not drop:
            raise AliasError("invalid", "name at least one entity to merge into the kept one")
        kept = self.resolve(keep)
        dropped = [self.resolve(d) for d in drop]  # all resolved before anything changes
        keys = list(dict.fromkeys(e.key for e in dropped if e.key != kept.key))
        if not keys:
            return Change("merge", kept.key, False, f"already merged into {kept.key!r}")
        merged = self.graph.alias_admin.merge_entities(kept.key, keys)
        self._mark_curated(merged)
        return self.record_change("merge", kept.key, f"merged {keys} into {kept.key!r}",
                          {"dropped": keys, "aliases": merged.aliases})

    def split(self, entity_name: str, aliases: Sequence[str], into: str) -> Change:
        aliases = clean_aliases(aliases)
        into = clean_name(into, "new entity name")
        new_key = normalize_alias(into)
        existing = self.graph.get_entity(new_key)
        if existing is not None:
            taken = {normalize_alias(a) for a in existing.aliases}
            if all(normalize_alias(a) in taken for a in aliases):
                return Change("split", new_key, False, f"{new_key!r} already exists with these aliases")
            raise AliasError("conflict", f"an entity named {existing.name!r} ({new_key!r}) already exists; "
                                         "add the aliases to it, or split into another name")
        entity = self.resolve(entity_name)
        owned = {normalize_alias(a) for a in entity.aliases}
        foreign = [a for a in aliases if normalize_alias(a) not in owned]
        if foreign:
            raise AliasError("conflict", f"{foreign} not alias(es) of {entity.key!r} (its aliases: {entity.aliases})")
        if any(normalize_alias(a) == entity.key for a in aliases):
            raise AliasError("conflict", f"{entity.name!r} is the canonical name of {entity.key!r} and stays with it")
        new = self.graph.alias_admin.split_entity(entity.key, aliases, into)
        self._mark_curated(entity)  # what it keeps is a person's decision now
        restored = self.graph.entity_chunk_counts([new.key]).get(new.key, 0)
        # Without merge provenance the new entity starts with no mention: find its chunks.
        link = None if restored else self.link_names(new.key, new.aliases, only_missing=True)
        details = {"from": entity.key, "aliases": new.aliases, "restored_chunks": restored}
        if link is not None:
            details["linking"] = link.to_dict()
        return self.record_change("split", new.key, f"split {new.aliases} off {entity.key!r} into {new.key!r} "
                                             f"({restored if link is None else len(link.linked_chunks or [])} chunk(s))", details)

    def delete(self, name: str) -> Change:
        entity = self.resolve(name)
        self.graph.alias_admin.delete_entity(entity.key)
        return self.record_change("delete", entity.key, f"deleted {entity.key!r} with its aliases, mentions and relations",
                          {"name": entity.name, "aliases": entity.aliases})

    # -- shared steps ------------------------------------------------------------------------
    def plan_aliases(self, key: str, have: set[str], aliases: Sequence[str], force: bool,
                      incoming: dict[str, Entity] | None = None) -> tuple[dict[str, str], list[str], list[str]]:
        """normalized → surface of the aliases new to ``key``, extracted entities to absorb,
        and conflict messages (``incoming``: entities an import is about to create)."""
        new: dict[str, str] = {}
        absorb: list[str] = []
        conflicts: list[str] = []
        for alias in aliases:
            normalized = normalize_alias(alias)
            if normalized in have or normalized in new:
                continue
            new[normalized] = alias
            owner = (incoming or {}).get(normalized) or self.graph.get_entity(normalized)
            if owner is None or owner.key == key:
                continue
            if not owner.curated:
                absorb.append(owner.key)
            elif not force:
                conflicts.append(f"alias {alias!r} is the canonical name of curated entity {owner.key!r}: merge them "
                                 f"(kgrag aliases merge {key!r} {owner.key!r}) or pass --force to let both claim it")
        return new, absorb, conflicts

    def _mark_curated(self, entity: Entity) -> None:
        if not entity.curated:
            self.graph.upsert_entities([Entity(entity.key, entity.name, entity.type, curated=True)])

    def link_names(self, key: str, names: Sequence[str], only_missing: bool = False):
        return link_aliases(self.graph, self.chunk_index, key, names,
                            max_entities_per_chunk=self.max_entities_per_chunk, only_missing=only_missing)

    def _ambiguous(self, key: str, normalized: Sequence[str]) -> dict[str, list[str]]:
        table = self.graph.lookup_aliases(list(normalized))
        return {alias: sorted(keys) for alias, keys in table.items() if len(keys) > 1 and key in keys}

    def record_change(self, action: str, target: str, message: str, details: dict[str, Any]) -> Change:
        """Audit the change; inside ``one_change`` the audit entry commits with the change and
        ``on_change`` runs once it has."""
        self.graph.audit.record_audit(AuditEntry(now(), self.user, action, target, details))
        if self._changing:
            self._changed_inside = True
        else:
            self._changed()
        return Change(action, target, True, message, details)

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()
        if self.keep_copy_in is not None:
            from kgrag.aliases.curation import keep_copy

            keep_copy(self.graph, self.keep_copy_in)

    @contextmanager
    def one_change(self) -> Iterator[None]:
        """The writes of the block (the change and its audit entry) as one transaction where
        the store can (``Transactional``): all of them or none."""
        atomic = self.graph.transaction() if isinstance(self.graph, Transactional) else nullcontext()
        self._changing, self._changed_inside = True, False
        try:
            with atomic:
                yield
        finally:
            self._changing = False
        if self._changed_inside:
            self._changed()

    def audit(self, limit: int = 50) -> list[AuditEntry]:
        return self.graph.audit.audit_log(limit)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")

