"""``kgrag check --repair``: a knowledge base whose store files are damaged, lost or disagree is
brought back to one that agrees with itself, losing nothing that can be brought back (issue
47: a lost graph file used to cost every chunk, JSON-posted documents, curated aliases and the
audit log).

In order:

1. A damaged embedded file (header, size or ``PRAGMA quick_check`` says so; the write journal
   too) is moved into ``backups/<time>/`` with a note, never deleted; a fresh one takes its
   place.
2. Unfinished writes are finished or discarded (the journal's recovery).
3. When the graph was lost (damaged, missing, or holding no curated name while the kept copy
   does), the curated names and the audit log are re-applied from the copy kept beside the
   knowledge base (``kgrag.aliases.curation``), before re-ingesting, as a glossary would be.
4. Every document one store holds and the other lacks is read again from its source
   (``kgrag.ingest.sources``: uploads, posted texts, the paths of earlier ingest runs, or the
   source path the surviving store records) and ingested: the lost half is rebuilt.
5. What no source holds any more cannot be rebuilt: the surviving stores are first copied with
   SQLite's online backup into ``backups/<time>/``, then those chunks (or document records)
   are removed so the stores agree. If the copy cannot be made, nothing is removed and the
   repair says why.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgrag.aliases import curation
from kgrag.components import Components
from kgrag.config import Settings
from kgrag.ingest.loaders import LoadError, load
from kgrag.ingest.sources import Found, Sources
from kgrag.stores import consistency
from kgrag.stores.factory import CHUNK_INDEX_FILE, EMBEDDED, GRAPH_STORE_FILE, JOURNAL_FILE

log = logging.getLogger(__name__)

BACKUPS = "backups"


@dataclass
class RepairReport:
    backup: str | None = None  # the folder holding what was set aside or backed up
    set_aside: dict[str, str] = field(default_factory=dict)  # damaged file → why
    rolled_forward: list[str] = field(default_factory=list)
    discarded: list[str] = field(default_factory=list)
    found: dict[str, list[str]] = field(default_factory=dict)  # the disagreement before rebuilding
    rebuilt: list[str] = field(default_factory=list)
    restored: dict[str, int] = field(default_factory=dict)  # curated entities, audit entries re-applied
    without_source: list[str] = field(default_factory=list)
    unreadable_sources: list[str] = field(default_factory=list)
    removed_orphans: list[str] = field(default_factory=list)
    dropped_documents: list[str] = field(default_factory=list)
    not_removed: str | None = None  # why what has no source was kept (the backup failed)
    remaining: dict[str, list[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # stores still unsound after the repair

    @property
    def ok(self) -> bool:
        return not self.problems and not any(self.remaining.values()) and self.not_removed is None

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, **{k: v for k, v in self.__dict__.items()}}


def repair(settings: Settings, *, embedder: Any = None, recognizer: Any = None) -> RepairReport:
    """Repair the knowledge base of ``settings`` (see the module docstring)."""
    report = RepairReport()
    data_dir = Path(settings.data_dir)
    backup_dir = data_dir / BACKUPS / time.strftime("%Y%m%d-%H%M%S")
    files = _embedded_files(settings)
    graph_file = files.get("graph")
    graph_lost = graph_file is not None and not graph_file.exists() and _has_chunks(files.get("chunks"))
    for half, path in files.items():
        damage = _file_damage(half, path)
        if damage is not None:
            from kgrag.stores.sqlite.backup import set_aside

            set_aside(path, backup_dir)
            report.set_aside[path.name] = damage
            graph_lost = graph_lost or half == "graph"
    if report.set_aside:
        report.backup = str(backup_dir)
        _note(backup_dir, "Set aside by 'kgrag check --repair' (damaged; a fresh file took its place):\n"
              + "".join(f"  {name}: {why}\n" for name, why in report.set_aside.items()))
    comps = Components(settings, embedder=embedder, recognizer=recognizer)
    try:
        _repair(comps, settings, report, backup_dir, graph_lost)
    finally:
        report.problems += comps.close(check_files=True)
    return report


def _repair(comps: Components, settings: Settings, report: RepairReport, backup_dir: Path, graph_lost: bool) -> None:
    journal, chunks, graph = comps.journal, comps.chunk_index, comps.graph
    with journal.writing():
        plan = consistency.recover(journal, chunks, graph)
    report.rolled_forward = [e.doc_id for e in plan.roll_forward]
    report.discarded = [e.doc_id for e in plan.discard]
    copy = Path(settings.data_dir) / curation.FILE
    if copy.exists() and (graph_lost or not (graph.curated_entities() or graph.audit.audit_log(1))):
        report.restored = curation.apply(graph, curation.load(copy))
    diff = consistency.check(journal, chunks, graph)
    report.found = diff.to_dict()
    wanted = sorted(set(diff.mismatched) | set(diff.orphaned))
    if wanted:
        found = Sources(settings.data_dir).find(wanted)
        _recorded_paths(comps, found, diff)
        report.unreadable_sources = found.failed
        if found.documents:
            ingest = comps.ingest_job().run_documents(found.documents)
            report.rebuilt = sorted(set(ingest.new) | set(ingest.changed) | set(ingest.rebuilt))
            report.unreadable_sources += [f"{f.path}: {f.reason}" for f in ingest.failed]
        diff = consistency.check(journal, chunks, graph)
        report.without_source = sorted(set(diff.mismatched) | set(diff.orphaned))
    if report.without_source:
        _remove_what_has_no_source(comps, settings, report, backup_dir)
    report.remaining = consistency.check(journal, chunks, graph).to_dict()
    if copy.exists() or graph.curated_entities() or graph.audit.audit_log(1):
        curation.keep_copy(graph, settings.data_dir)


def _remove_what_has_no_source(comps: Components, settings: Settings, report: RepairReport, backup_dir: Path) -> None:
    """Back the stores up, then make them agree without what no source can bring back; when
    the backup cannot be made, keep everything and say why."""
    files = [f for f in _embedded_files(settings).values() if f.exists()]
    try:
        from kgrag.stores.sqlite.backup import back_up

        back_up(files, backup_dir)
    except Exception as exc:  # noqa: BLE001 - any failure to copy means: remove nothing
        report.not_removed = (f"{len(report.without_source)} documents have no source to rebuild them from and were "
                              f"kept: backing the knowledge base up into {backup_dir} failed ({exc})")
        return
    if files:
        report.backup = str(backup_dir)
        _note(backup_dir, "Backed up by 'kgrag check --repair' before removing what no source could rebuild:\n"
              + "".join(f"  {doc_id}\n" for doc_id in report.without_source))
    done = consistency.repair(comps.journal, comps.chunk_index, comps.graph, drop_mismatched=True)
    report.removed_orphans, report.dropped_documents = done.removed_orphans, done.dropped_documents


def _recorded_paths(comps: Components, found: Found, diff: consistency.StoreDiff) -> None:
    """Documents no kept source held: read again from the source path the surviving store
    records for them, when that file is still there (knowledge bases built before sources were
    kept)."""
    missing = set(found.missing)
    if not missing:
        return
    paths: dict[str, str] = {d.id: d.source for d in comps.graph.list_documents() if d.id in missing}
    orphans = missing & set(diff.orphaned)
    if orphans:
        by_document = comps.chunk_index.chunk_ids_by_document()
        firsts = [min(by_document[d]) for d in sorted(orphans) if by_document.get(d)]
        paths.update({c.doc_id: c.source for c in comps.chunk_index.get(firsts)})
    for source in sorted(set(paths.values())):
        path = Path(source)
        if not path.is_file():
            continue
        try:
            docs = load(path)
        except LoadError as exc:
            found.failed.append(str(exc))
            continue
        for doc in docs:
            if doc.id in missing:
                missing.discard(doc.id)
                found.documents.append(doc)
    found.missing = sorted(missing)


def _embedded_files(settings: Settings) -> dict[str, Path]:
    """The store files under the data dir: the journal always, each half when it is embedded."""
    data_dir = Path(settings.data_dir)
    files = {"journal": data_dir / JOURNAL_FILE}
    if settings.graph_store == EMBEDDED:
        files["graph"] = data_dir / GRAPH_STORE_FILE
    if settings.chunk_store == EMBEDDED:
        files["chunks"] = data_dir / CHUNK_INDEX_FILE
    return files


def _file_damage(half: str, path: Path) -> str | None:
    from kgrag.stores.sqlite.backup import file_damage
    from kgrag.stores.sqlite.db import CHUNK_INDEX_APP_ID, GRAPH_STORE_APP_ID, JOURNAL_APP_ID

    app_id = {"journal": JOURNAL_APP_ID, "graph": GRAPH_STORE_APP_ID, "chunks": CHUNK_INDEX_APP_ID}[half]
    return file_damage(path, app_id)


def _has_chunks(path: Path | None) -> bool:
    return path is not None and path.exists() and path.stat().st_size > 0


def _note(folder: Path, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "NOTE.txt").open("a", encoding="utf-8") as f:
        f.write(text)
