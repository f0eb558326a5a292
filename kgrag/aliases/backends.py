"""Where ``kgrag aliases`` commands run: on the local stores, or through a running server.

Both backends answer with the same plain dicts the HTTP API returns (a change's ``to_dict()``,
``list_entities``' body, suggestion and audit rows), so the CLI renders one shape whichever ran
the command. The remote backend imports no store and no model: an alias command against a
server costs one request (the point of ``--server``; figures in docs/decisions.md, "The ONNX
engine").

Refusals are ``InputError`` (``AliasError`` locally, ``RemoteRefused`` remotely: exit 2);
failures are ``StoreError`` (a store, or the server, failed: exit 1).
"""

from __future__ import annotations

import tempfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from kgrag.client import KgragClient, entity_path
from kgrag.errors import InputError, StoreError

JOB_HEADER = "X-Kgrag-Job"  # as kgrag.server.jobs names it (the client imports nothing of the server)
PROGRESS_EVERY_S = 0.5


class AliasBackend(Protocol):
    def entities(self, *, entity: str | None, every: bool, limit: int, offset: int) -> dict[str, Any]: ...
    def ambiguous(self) -> list[dict[str, Any]]: ...
    def show(self, name: str) -> dict[str, Any]: ...
    def add(self, canonical: str, names: list[str], *, force: bool, type: str | None) -> dict[str, Any]: ...
    def remove(self, canonical: str, names: list[str]) -> dict[str, Any]: ...
    def rename(self, old: str, new: str) -> dict[str, Any]: ...
    def merge(self, keep: str, drop: list[str]) -> dict[str, Any]: ...
    def split(self, entity: str, names: list[str], into: str) -> dict[str, Any]: ...
    def delete(self, entity: str) -> dict[str, Any]: ...
    def import_glossary(self, path: Path, *, force: bool,
                        progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]: ...
    def export_glossary(self, path: Path, *, every: bool) -> dict[str, Any]: ...
    def suggest(self, *, limit: int, max_entities: int, embeddings: bool) -> list[dict[str, Any]]: ...
    def audit(self, limit: int) -> list[dict[str, Any]]: ...


class LocalAliases:
    """The alias service over this process's stores (``comps``: a ``Components``)."""

    def __init__(self, service, comps):
        self.service, self.comps = service, comps

    def entities(self, *, entity, every, limit, offset):
        from kgrag.aliases.views import list_entities

        return list_entities(self.service, entity=entity, every=every, limit=limit, offset=offset)

    def ambiguous(self):
        from kgrag.aliases.views import ambiguous_aliases

        return ambiguous_aliases(self.service)

    def show(self, name):
        from kgrag.aliases.views import show

        return show(self.service, name)

    def add(self, canonical, names, *, force, type):
        return self.service.add(canonical, names, force=force, type=type).to_dict()

    def remove(self, canonical, names):
        return self.service.remove(canonical, names).to_dict()

    def rename(self, old, new):
        return self.service.rename(old, new).to_dict()

    def merge(self, keep, drop):
        return self.service.merge(keep, drop).to_dict()

    def split(self, entity, names, into):
        return self.service.split(entity, names, into).to_dict()

    def delete(self, entity):
        return self.service.delete(entity).to_dict()

    def import_glossary(self, path, *, force, progress=None):
        from kgrag.aliases.glossary_io import import_glossary

        return import_glossary(self.service, path, force=force, progress=progress).to_dict()

    def export_glossary(self, path, *, every):
        from kgrag.aliases.glossary_io import export_glossary

        return export_glossary(self.service, path, every=every)

    def suggest(self, *, limit, max_entities, embeddings):
        from kgrag.aliases.suggest import suggest_duplicates

        found = suggest_duplicates(self.service.graph, embedder=self.comps.embedder if embeddings else None,
                                   limit=limit, max_entities=max_entities)
        return [s.to_dict() for s in found]

    def audit(self, limit):
        return [e.__dict__ for e in self.service.audit(limit)]


class RemoteAliases:
    """The same operations through a running server's admin routes (API key required)."""

    def __init__(self, client: KgragClient):
        self.client = client

    def entities(self, *, entity, every, limit, offset):
        return self.client.get("/v1/entities/_aliases", {"entity": entity, "all": every, "limit": limit, "offset": offset})

    def ambiguous(self):
        return self.client.get("/v1/entities/_aliases", {"ambiguous": True})["ambiguous"]

    def show(self, name):
        return self.client.get("/v1/entities/_show", {"name": name})

    def add(self, canonical, names, *, force, type):
        return self.client.post(entity_path(canonical, "/aliases"), {"aliases": names, "force": force, "type": type})

    def remove(self, canonical, names):
        return self.client.delete(entity_path(canonical, "/aliases"), {"alias": names})

    def rename(self, old, new):
        return self.client.post(entity_path(old, "/rename"), {"name": new})

    def merge(self, keep, drop):
        return self.client.post("/v1/entities/_merge", {"keep": keep, "drop": drop})

    def split(self, entity, names, into):
        return self.client.post(entity_path(entity, "/split"), {"aliases": names, "into": into})

    def delete(self, entity):
        return self.client.delete(entity_path(entity))

    def import_glossary(self, path, *, force, progress=None):
        """Any glossary format is read here (its errors name the file and line) and sent as CSV.
        With ``progress``: the request names its job (``X-Kgrag-Job``) and the job's progress
        is asked for every ``PROGRESS_EVERY_S`` while it runs."""
        from kgrag.aliases.service import AliasError
        from kgrag.lexicon.glossary import GlossaryError, load_glossary, write_glossary_csv

        try:
            entries = load_glossary(path)
            with tempfile.TemporaryDirectory() as tmp:
                csv_path = Path(tmp) / "glossary.csv"
                write_glossary_csv(entries, csv_path)
                data = csv_path.read_bytes()
        except GlossaryError as exc:
            raise AliasError("invalid", str(exc)) from None
        job = uuid.uuid4().hex
        stop = threading.Event()
        watcher = None
        if progress is not None:
            watcher = threading.Thread(target=self._follow, args=(job, progress, stop), daemon=True)
            watcher.start()
        try:
            return self.client.request("POST", "/v1/entities/_import", params={"force": force}, data=data,
                                       content_type="text/csv", headers={JOB_HEADER: job})
        finally:
            stop.set()
            if watcher is not None:
                watcher.join(timeout=5)

    def _follow(self, job: str, progress: Callable[[str, int, int], None], stop: threading.Event) -> None:
        while not stop.wait(PROGRESS_EVERY_S):
            try:
                status = self.client.get(f"/v1/jobs/{job}")
            except (StoreError, InputError):  # not started yet (404), or a blip: ask again
                continue
            if status.get("state") == "running" and status.get("stage") != "queued":
                progress(status["stage"], status["done"], status["total"])

    def export_glossary(self, path, *, every):
        from kgrag.aliases.service import AliasError
        from kgrag.lexicon.glossary import load_glossary

        text = self.client.get("/v1/entities/_export", {"all": every})
        try:
            Path(path).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise AliasError("invalid", f"cannot write {path}: {exc}") from None
        entries = load_glossary(path) if text.count("\n") > 1 else []
        return {"path": str(path), "entities": len(entries), "aliases": sum(len(e.aliases) for e in entries)}

    def suggest(self, *, limit, max_entities, embeddings):
        params = {"limit": limit, "max_entities": max_entities, "embeddings": embeddings}
        return self.client.get("/v1/entities/_suggest", params)["suggestions"]

    def audit(self, limit):
        return self.client.get("/v1/entities/_audit", {"limit": limit})["entries"]
