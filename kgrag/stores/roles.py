"""The alias-admin and audit methods every graph store answers, forwarded to its role objects.

A graph store holds ``alias_admin`` and ``audit`` objects of its own engine (the roles have
their own protocols and contract suites); ``GraphStore`` also promises their methods on the
store itself. Engine-free, so each engine package keeps only its role objects."""

from __future__ import annotations

from collections.abc import Sequence

from kgrag.stores.base import AliasAdmin, AuditEntry, AuditLog
from kgrag.types import Entity, Mention, Relation


class RoleForwarding:
    """Mixin: ``alias_admin`` and ``audit`` set by the store's ``__init__``."""

    alias_admin: AliasAdmin
    audit: AuditLog

    def list_entities(self, limit: int | None = None, offset: int = 0) -> list[Entity]:
        return self.alias_admin.list_entities(limit, offset)

    def add_aliases(self, key: str, aliases: Sequence[str]) -> list[str]:
        return self.alias_admin.add_aliases(key, aliases)

    def remove_aliases(self, key: str, aliases: Sequence[str]) -> list[str]:
        return self.alias_admin.remove_aliases(key, aliases)

    def rename_entity(self, key: str, new_name: str) -> Entity:
        return self.alias_admin.rename_entity(key, new_name)

    def merge_entities(self, keep: str, drop: Sequence[str]) -> Entity:
        return self.alias_admin.merge_entities(keep, drop)

    def split_entity(self, key: str, aliases: Sequence[str], new_name: str) -> Entity:
        return self.alias_admin.split_entity(key, aliases, new_name)

    def delete_entity(self, key: str) -> bool:
        return self.alias_admin.delete_entity(key)

    def add_mentions(self, mentions: Sequence[Mention], relations: Sequence[Relation]) -> int:
        return self.alias_admin.add_mentions(mentions, relations)

    def record_audit(self, entry: AuditEntry) -> None:
        self.audit.record_audit(entry)

    def audit_log(self, limit: int = 100) -> list[AuditEntry]:
        return self.audit.audit_log(limit)
