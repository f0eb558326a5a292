"""``kgrag aliases ...``: curate entity names from the command line (``scripts/aliases`` wraps it).

Changes take effect at once for ingestion and for query-time exact linking (a running server
looks aliases up per question); a running server's fuzzy matcher refreshes within a minute
(``kgrag.retrieve.linking.FUZZY_TTL_S``), or at once when the change goes through the API.
With ``--server URL`` (or $KGRAG_SERVER_URL) a command runs through that server's admin API
(``kgrag.aliases.backends``): nothing is loaded here, and the server's linker sees the change at
once. Exit codes: 0 done (or nothing to do), 1 the store (or server) failed, 2 refused input
(nothing changed).
"""

from __future__ import annotations

import getpass
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from kgrag.aliases.backends import AliasBackend

# The service is imported when a command runs: registering this group must not slow down
# every other ``kgrag`` command.


def _default_user() -> str:
    try:
        return os.environ.get("USER") or getpass.getuser()
    except Exception:  # no passwd entry (containers)
        return "unknown"


@click.group("aliases")
@click.option("--user", default=None, help="Who is making the change, for the audit log (default: $USER).")
@click.option("--server", metavar="URL", envvar="KGRAG_SERVER_URL",
              help="Run the command through a running kgrag server (its admin API) instead of opening the "
                   "stores here: no model or store is loaded in this process. Default: $KGRAG_SERVER_URL.")
@click.option("--api-key", envvar="KGRAG_API_KEY", default=None,
              help="The server's admin API key (default: $KGRAG_API_KEY, else server.api_key of the config).")
@click.pass_context
def aliases(ctx: click.Context, user: str | None, server: str | None, api_key: str | None) -> None:
    """Curate aliases: which names mean the same entity (effective at once, audited)."""
    ctx.meta["kgrag_alias_user"] = user or _default_user()
    ctx.meta["kgrag_alias_server"] = (server, api_key)


@contextmanager
def _backend(ctx: click.Context) -> Iterator[AliasBackend]:
    """The local stores, or the server named by ``--server``; refusals exit 2, failures exit 1."""
    from kgrag.errors import InputError, StoreDamaged, StoreError

    comps = None
    try:
        server, api_key = ctx.meta["kgrag_alias_server"]
        settings = ctx.find_root().obj
        if server:
            from kgrag.aliases.backends import RemoteAliases
            from kgrag.client import KgragClient

            key = api_key or settings.server.api_key
            yield RemoteAliases(KgragClient(server, api_key=key, user=ctx.meta["kgrag_alias_user"]))
        else:
            from kgrag.aliases.backends import LocalAliases
            from kgrag.aliases.service import AliasService
            from kgrag.components import Components

            comps = Components(settings)
            yield LocalAliases(AliasService.from_components(comps, user=ctx.meta["kgrag_alias_user"]), comps)
    except InputError as exc:  # AliasError here, RemoteRefused (HTTP 4xx) through a server
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except StoreDamaged as exc:  # names the file and the repair
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except StoreError as exc:  # a store, or the server, failed
        click.echo(f"error: the store refused: {exc}", err=True)
        sys.exit(1)
    finally:
        if comps is not None:
            comps.close()


def _report(change: dict, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(change, ensure_ascii=False, indent=2))
    else:
        click.echo(change["message"] if change["changed"] else f"unchanged: {change['message']}")


_json = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


@aliases.command("list")
@click.option("--entity", help="Only this entity (key, name or alias).")
@click.option("--ambiguous", is_flag=True, help="Aliases claimed by more than one entity, with the candidates.")
@click.option("--all", "every", is_flag=True, help="Every entity, also those with no alias besides their name.")
@click.option("--limit", type=click.IntRange(1), default=100, show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0)
@_json
@click.pass_context
def list_cmd(ctx, entity, ambiguous, every, limit, offset, as_json) -> None:
    """Entities with their aliases (curated ones, and extracted ones that have aliases)."""
    with _backend(ctx) as backend:
        if ambiguous:
            rows = backend.ambiguous()
            if as_json:
                click.echo(json.dumps({"ambiguous": rows}, ensure_ascii=False, indent=2))
                return
            for row in rows:
                cands = ", ".join(f"{c['key']} ({c['chunks']} chunks)" for c in row["candidates"])
                click.echo(f"{row['alias']!r} → {cands}")
            click.echo(f"{len(rows)} ambiguous alias(es)", err=True)
            return
        body = backend.entities(entity=entity, every=every, limit=limit, offset=offset)
    if as_json:
        click.echo(json.dumps(body, ensure_ascii=False, indent=2))
        return
    for e in body["entities"]:
        flag = "*" if e["curated"] else " "
        click.echo(f"{flag} {e['name']} [{e['key']}] ({e['type']}, {e['chunks']} chunks): {' | '.join(e['aliases'])}")
    shown = len(body["entities"])
    click.echo(f"{shown} of {body['total']} shown (* curated)", err=True)


@aliases.command()
@click.argument("name")
@_json
@click.pass_context
def show(ctx, name, as_json) -> None:
    """One entity: aliases, mention counts, top neighbours."""
    with _backend(ctx) as backend:
        body = backend.show(name)
    if as_json:
        click.echo(json.dumps(body, ensure_ascii=False, indent=2))
        return
    click.echo(f"{body['name']} [{body['key']}] {body['type']}{' curated' if body['curated'] else ''}")
    click.echo(f"  aliases: {' | '.join(body['aliases']) or '(none)'}")
    click.echo(f"  mentioned {body['mentions']} times in {body['chunks']} chunks")
    for alias, others in body["shared_aliases"].items():
        click.echo(f"  ambiguous: {alias!r} also names {others}")
    for n in body["neighbours"]:
        click.echo(f"  – {n['name']} [{n['key']}] weight {n['weight']:g}")


@aliases.command()
@click.argument("canonical")
@click.argument("names", nargs=-1, required=True)
@click.option("--force", is_flag=True, help="Add an alias even when it is another curated entity's name (both claim it).")
@click.option("--type", "entity_type", help="Type of the entity when it is created (default CONCEPT).")
@_json
@click.pass_context
def add(ctx, canonical, names, force, entity_type, as_json) -> None:
    """Add aliases to CANONICAL (created, curated, when no entity has that name)."""
    with _backend(ctx) as backend:
        _report(backend.add(canonical, list(names), force=force, type=entity_type), as_json)


@aliases.command()
@click.argument("canonical")
@click.argument("names", nargs=-1, required=True)
@_json
@click.pass_context
def remove(ctx, canonical, names, as_json) -> None:
    """Remove aliases from an entity."""
    with _backend(ctx) as backend:
        _report(backend.remove(canonical, list(names)), as_json)


@aliases.command()
@click.argument("old")
@click.argument("new")
@_json
@click.pass_context
def rename(ctx, old, new, as_json) -> None:
    """Give an entity a new canonical name (the old one stays an alias)."""
    with _backend(ctx) as backend:
        _report(backend.rename(old, new), as_json)


@aliases.command()
@click.argument("keep")
@click.argument("drop", nargs=-1, required=True)
@_json
@click.pass_context
def merge(ctx, keep, drop, as_json) -> None:
    """Merge DROP entities into KEEP (aliases, mentions, relations)."""
    with _backend(ctx) as backend:
        _report(backend.merge(keep, list(drop)), as_json)


@aliases.command()
@click.argument("entity")
@click.argument("names", nargs=-1, required=True)
@click.option("--into", "into", required=True, help="Canonical name of the new entity.")
@_json
@click.pass_context
def split(ctx, entity, names, into, as_json) -> None:
    """Move aliases of ENTITY to a new entity (undoes a merge exactly)."""
    with _backend(ctx) as backend:
        _report(backend.split(entity, list(names), into), as_json)


@aliases.command()
@click.argument("entity")
@_json
@click.pass_context
def delete(ctx, entity, as_json) -> None:
    """Delete an entity with its aliases, mentions and relations."""
    with _backend(ctx) as backend:
        _report(backend.delete(entity), as_json)


@aliases.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Let aliases equal to other curated entities' names be claimed by both.")
@_json
@click.pass_context
def import_cmd(ctx, path, force, as_json) -> None:
    """Import a glossary (CSV canonical,type,aliases; YAML or line format too); its progress
    is shown on stderr."""
    shown = _Progress()
    with _backend(ctx) as backend:
        try:
            change = backend.import_glossary(path, force=force, progress=shown)
        finally:
            shown.close()
        _report(change, as_json)


class _Progress:
    """An import's progress on stderr: a line kept up to date on a terminal, else one line per
    stage as it starts."""

    UNITS = {"checking": "rows", "linking": "chunks examined"}

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.stage: str | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        unit = self.UNITS.get(stage, "")
        if self.tty:
            click.echo(f"\r{stage}: {done:,}/{total:,} {unit}".rstrip() + "   ", err=True, nl=False)
        elif stage != self.stage:
            click.echo(f"{stage}: {total:,} {unit}".rstrip() if total else f"{stage}", err=True)
        self.stage = stage

    def close(self) -> None:
        if self.tty and self.stage is not None:
            click.echo("", err=True)


@aliases.command("backup")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def backup_cmd(ctx, path) -> None:
    """Write every curated entity and the whole audit log to PATH (JSON), to re-apply with
    'restore' (the knowledge base keeps its own copy in DATA_DIR/curation.json)."""
    from kgrag.aliases import curation

    with _local_graph(ctx) as graph:
        counts = curation.save(graph, path)
    click.echo(f"wrote {counts['curated']} curated entities and {counts['audit']} audit entries to {path}")


@aliases.command("restore")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_context
def restore_cmd(ctx, path) -> None:
    """Re-apply a backup: curated entities are created or given the aliases they lack, audit
    entries the log lacks are appended (with their own time and author); nothing else changes."""
    from kgrag.aliases import curation

    with _local_graph(ctx) as graph:
        counts = curation.apply(graph, curation.load(path))
        curation.keep_copy(graph, ctx.find_root().obj.data_dir)
    click.echo(f"re-applied {counts['entities']} curated entities and {counts['audit_entries']} audit entries")


@contextmanager
def _local_graph(ctx: click.Context) -> Iterator:
    """The graph store of the data dir (backup and restore read and write it directly)."""
    from kgrag.components import Components
    from kgrag.errors import InputError

    if ctx.meta["kgrag_alias_server"][0]:
        click.echo("error: backup and restore work on the data dir's own stores, not through --server", err=True)
        sys.exit(2)
    comps = Components(ctx.find_root().obj)
    try:
        yield comps.graph
    except InputError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    finally:
        comps.close()


@aliases.command("export")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--all", "every", is_flag=True, help="Also extracted entities that have aliases besides their name.")
@click.pass_context
def export_cmd(ctx, path, every) -> None:
    """Export curated entities as a glossary CSV (the format ingestion and import read)."""
    with _backend(ctx) as backend:
        body = backend.export_glossary(path, every=every)
    click.echo(f"wrote {body['entities']} entities ({body['aliases']} aliases) to {body['path']}")


@aliases.command()
@click.option("--limit", type=click.IntRange(1), default=30, show_default=True)
@click.option("--max-entities", type=click.IntRange(2), default=2000, show_default=True,
              help="Compare the most mentioned entities (and every curated one) pairwise.")
@click.option("--no-embeddings", is_flag=True, help="Skip name embeddings (no model load).")
@_json
@click.pass_context
def suggest(ctx, limit, max_entities, no_embeddings, as_json) -> None:
    """Candidate duplicates to confirm by hand (nothing is changed)."""
    with _backend(ctx) as backend:
        found = backend.suggest(limit=limit, max_entities=max_entities, embeddings=not no_embeddings)
    if as_json:
        click.echo(json.dumps({"suggestions": found}, ensure_ascii=False, indent=2))
        return
    for s in found:
        why = ", ".join(f"{k}={v}" for k, v in s["reasons"].items())
        keep, drop = s["keep"], s["drop"]
        click.echo(f"{s['score']:.2f}  {keep['name']} [{keep['key']}] ⇐ {drop['name']} [{drop['key']}]  ({why})")
        click.echo(f"      {s['command']}")
    click.echo(f"{len(found)} suggestion(s); nothing was changed", err=True)


@aliases.command()
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True)
@_json
@click.pass_context
def audit(ctx, limit, as_json) -> None:
    """The latest alias changes: when, who, what."""
    with _backend(ctx) as backend:
        entries = backend.audit(limit)
    if as_json:
        click.echo(json.dumps({"entries": entries}, ensure_ascii=False, indent=2))
        return
    for e in entries:
        click.echo(f"{e['at']}  {e['who']:<12} {e['action']:<7} {e['target']}  {json.dumps(e['details'], ensure_ascii=False)}")
