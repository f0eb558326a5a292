"""Keeping the two stores in step: the write protocol's journal, recovery and the check.

A document lives in two stores (chunks in a ChunkIndex, its record and graph in a graph store)
that no transaction spans. The ingestion job writes one document thus:

1. ``journal.begin``: the new version (its hash, chunks and vectors) is recorded as pending;
2. ``graph.write_document``: one graph transaction replaces the document's graph content and
   records the new hash last. **This is the commit point**: before it the old version is the
   document, after it the new one;
3. ``chunk_index.replace_document``: the document's chunks are swapped for the new ones (one
   transaction in SQLite);
4. ``journal.finish``.

A delete is the same with no payload: the graph delete is the commit point, then the chunks go.

A failure or a crash before the commit point leaves the old version in both stores; after it,
the journal still holds what step 3 needs, so recovery (``recover``: at the start of every
ingest and delete, at server start and by ``kgrag check --repair``) finishes it: an entry whose
hash the graph records is rolled forward from the journal, any other is discarded
(``plan_recovery``, a pure function of the journal and the graph's hashes). Between steps 2
and 3 (one transaction apart) a query can meet the new graph with the old chunks; each store
alone always shows one whole version.

The check (``compare_stores``) compares what the stores hold, for damage no protocol prevents
(a deleted or truncated database file): a document whose chunks the index does not hold (or
holds other chunks of) is *mismatched* and re-processed by the next ingest of its source as if
changed; chunks whose document the graph does not know are *orphaned* and removed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from kgrag.errors import StoreError
from kgrag.types import Chunk

log = logging.getLogger(__name__)

# The hash a journal entry records for a delete.
DELETED = ""


@dataclass(frozen=True)
class PendingWrite:
    """One unfinished write: the version being written (``hash``), or a delete (``DELETED``)."""

    doc_id: str
    hash: str

    @property
    def is_delete(self) -> bool:
        return self.hash == DELETED


class WriteJournal(Protocol):
    """The pending writes of one knowledge base (``kgrag.stores.sqlite.journal``)."""

    def begin(self, doc_id: str, hash: str, chunks: Sequence[Chunk] = (),
              vectors: np.ndarray | None = None) -> None:
        """Record a pending write (replacing any entry of ``doc_id``), durably, before the
        stores are touched; ``hash`` DELETED for a delete."""

    def finish(self, doc_id: str) -> None:
        """Forget the entry of ``doc_id`` (done, or abandoned before the commit point)."""

    def pending(self) -> list[PendingWrite]:
        ...

    def payload(self, doc_id: str) -> tuple[list[Chunk], np.ndarray | None]:
        """The chunks and vectors recorded by ``begin``."""

    def writing(self) -> AbstractContextManager[None]:
        """Held by whoever writes the stores or recovers: one writer per knowledge base, across
        processes (a server starting while a CLI ingest writes)."""

    def writing_if_idle(self) -> AbstractContextManager[bool]:
        """The writer lock when no one holds it (yields True), else False at once."""

    def close(self) -> None:
        ...


@runtime_checkable
class HealthCheck(Protocol):
    """A store that can tell whether it is fit to serve (every shipped adapter)."""

    def problems(self) -> list[str]:
        """[] when fine; else one line per problem (a removed or corrupt file, no server)."""


@runtime_checkable
class FileCheck(Protocol):
    """A store kept in a local file (the embedded SQLite stores)."""

    def check_file(self) -> list[str]:
        """The file's integrity check on a connection of its own, so it also runs after
        ``close()``; [] when sound, and a passed check is noted beside the file."""


@dataclass(frozen=True)
class RecoveryPlan:
    """What to do with each pending write: ``roll_forward`` (the graph committed it: finish the
    chunk half) or ``discard`` (it never reached the commit point: the old version stands)."""

    roll_forward: list[PendingWrite]
    discard: list[PendingWrite]


def plan_recovery(pending: Iterable[PendingWrite], graph_hashes: Mapping[str, str]) -> RecoveryPlan:
    """``graph_hashes``: document id → the hash the graph records. A replace committed when the
    graph records its hash; a delete committed when the graph has no such document."""
    forward: list[PendingWrite] = []
    discard: list[PendingWrite] = []
    for entry in pending:
        stored = graph_hashes.get(entry.doc_id)
        committed = stored is None if entry.is_delete else stored == entry.hash
        (forward if committed else discard).append(entry)
    return RecoveryPlan(forward, discard)


@dataclass(frozen=True)
class StoreDiff:
    """Where the stores disagree. ``mismatched``: documents whose chunks the index lacks or
    holds others of; ``orphaned``: document ids with chunks in the index and no document in
    the graph; ``pending``: writes the journal has not finished."""

    mismatched: list[str] = field(default_factory=list)
    orphaned: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.mismatched or self.orphaned or self.pending)

    def describe(self) -> str:
        """One line naming each kind of disagreement (a few ids each), "" when none."""
        parts = []
        for what, ids in (
            ("documents without their chunks (re-ingest them)", self.mismatched),
            ("chunk sets without a document", self.orphaned),
            ("unfinished writes", self.pending),
        ):
            if ids:
                shown = ", ".join(repr(i) for i in ids[:3]) + (", …" if len(ids) > 3 else "")
                parts.append(f"{len(ids)} {what}: {shown}")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, list[str]]:
        return {"mismatched": self.mismatched, "orphaned": self.orphaned, "pending": self.pending}


def compare_stores(graph_chunks: Mapping[str, set[str]], index_chunks: Mapping[str, set[str]],
                   pending: Iterable[PendingWrite] = ()) -> StoreDiff:
    """``graph_chunks``: document → chunk ids the graph lists for it (every document, chunkless
    ones with an empty set); ``index_chunks``: document id → chunk ids the index holds."""
    return StoreDiff(
        mismatched=sorted(d for d, ids in graph_chunks.items() if index_chunks.get(d, set()) != ids),
        orphaned=sorted(d for d in index_chunks if d not in graph_chunks),
        pending=sorted(e.doc_id for e in pending),
    )


class _ChunkHalf(Protocol):
    def replace_document(self, doc_id: str, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> int:
        ...

    def delete_document(self, doc_id: str) -> int:
        ...

    def chunk_ids_by_document(self) -> dict[str, set[str]]:
        ...


class _GraphHalf(Protocol):
    def document_chunk_ids(self) -> dict[str, set[str]]:
        ...

    def document_hashes(self) -> dict[str, str]:
        ...

    def delete_document(self, doc_id: str) -> bool:
        ...


def recover(journal: WriteJournal, chunks: _ChunkHalf, graph: _GraphHalf,
            doc_id: str | None = None) -> RecoveryPlan:
    """Finish or discard every pending write (only ``doc_id``'s when given; see the module
    docstring); the caller holds ``journal.writing()``. A step that fails raises and leaves its
    entry for the next try."""
    pending = [e for e in journal.pending() if doc_id is None or e.doc_id == doc_id]
    if not pending:
        return RecoveryPlan([], [])
    plan = plan_recovery(pending, graph.document_hashes())
    for entry in plan.discard:
        journal.finish(entry.doc_id)
    for entry in plan.roll_forward:
        if entry.is_delete:
            chunks.delete_document(entry.doc_id)
        else:
            chunks.replace_document(entry.doc_id, *journal.payload(entry.doc_id))
        journal.finish(entry.doc_id)
    return plan


@contextmanager
def settle_on_error(journal: WriteJournal, chunks: _ChunkHalf, graph: _GraphHalf, doc_id: str) -> Iterator[None]:
    """Around the commit step: when it raises, whether it committed is unknown (an error after
    the server committed, a lost reply), so the graph decides: the write is finished or its
    entry discarded at once. If that fails as well (the store is down) the entry stays for the
    next recovery; the original error is raised either way."""
    try:
        yield
    except BaseException:
        try:
            recover(journal, chunks, graph, doc_id)
        except Exception:  # noqa: BLE001 - the original error is the one to report
            log.warning("write of %r left pending for the next recovery", doc_id, exc_info=True)
        raise


def check(journal: WriteJournal, chunks: _ChunkHalf, graph: _GraphHalf) -> StoreDiff:
    """Compare the stores (read-only)."""
    return compare_stores(graph.document_chunk_ids(), chunks.chunk_ids_by_document(), journal.pending())


@dataclass
class RepairReport:
    recovered: RecoveryPlan
    before: StoreDiff
    removed_orphans: list[str] = field(default_factory=list)
    dropped_documents: list[str] = field(default_factory=list)
    after: StoreDiff = field(default_factory=StoreDiff)

    def to_dict(self) -> dict:
        return {
            "rolled_forward": [e.doc_id for e in self.recovered.roll_forward],
            "discarded": [e.doc_id for e in self.recovered.discard],
            "found": self.before.to_dict(),
            "removed_orphans": self.removed_orphans,
            "dropped_documents": self.dropped_documents,
            "remaining": self.after.to_dict(),
            "ok": self.after.ok,
        }


def repair(journal: WriteJournal, chunks: _ChunkHalf, graph: _GraphHalf, *,
           drop_mismatched: bool) -> RepairReport:
    """Recover pending writes, remove orphaned chunks and, with ``drop_mismatched``, delete the
    mismatched documents from both stores (their chunks are gone: only a re-ingest of their
    source can restore them; without it they stay listed, mismatched). Holds the writer lock."""
    with journal.writing():
        plan = recover(journal, chunks, graph)
        before = check(journal, chunks, graph)
        report = RepairReport(plan, before)
        for doc_id in before.orphaned:
            chunks.delete_document(doc_id)
            report.removed_orphans.append(doc_id)
        if drop_mismatched:
            for doc_id in before.mismatched:
                _delete_both(journal, chunks, graph, doc_id)
                report.dropped_documents.append(doc_id)
        report.after = check(journal, chunks, graph)
    return report


def delete_document(journal: WriteJournal, chunks: _ChunkHalf, graph: _GraphHalf, doc_id: str) -> bool:
    """Delete a document from both stores by the write protocol; False when neither knew it."""
    with journal.writing():
        return _delete_both(journal, chunks, graph, doc_id)


def _delete_both(journal: WriteJournal, chunks: _ChunkHalf, graph: _GraphHalf, doc_id: str) -> bool:
    with settle_on_error(journal, chunks, graph, doc_id):
        journal.begin(doc_id, DELETED)
        removed_doc = graph.delete_document(doc_id)  # the commit point
    removed_chunks = chunks.delete_document(doc_id)
    journal.finish(doc_id)
    return removed_doc or removed_chunks > 0


def readiness_problems(journal: WriteJournal, chunks: _ChunkHalf, graph: _GraphHalf) -> list[str]:
    """Why the knowledge base should not serve ([] when it may): a store's own problems
    (``HealthCheck``), else any disagreement between the stores or unfinished write."""
    found = [p for store in (chunks, graph) if isinstance(store, HealthCheck) for p in store.problems()]
    if found:
        return found
    try:
        # Compared only while no write is in flight: mid-write the stores differ by design
        # (pending entry, graph committed before the chunks), which is no reason to leave a
        # load balancer's rotation. A busy writer: the stores' own soundness decides alone.
        with journal.writing_if_idle() as idle:
            diff = check(journal, chunks, graph) if idle else StoreDiff()
    except StoreError as exc:
        return [str(exc)]
    return [] if diff.ok else [f"the stores disagree: {diff.describe()}"]
