"""The ingestion job: load → chunk → embed → extract → write, incremental by content hash.

Why documents are written one at a time even though embedding is batched: each document's
write is the unit of atomicity. It follows the write protocol of ``kgrag.stores.consistency``
(journal, graph commit with the hash last, chunk swap, journal done): a failure at any step
keeps the old version or, past the commit point, leaves the journal entry that finishes the new
one. Every run starts by finishing those entries and comparing the stores, so a killed run (or
a damaged store file) converges to a clean run: documents the stores disagree on are
re-processed as changed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from kgrag.config import MetadataSettings
from kgrag.errors import StoreError
from kgrag.ingest import roots
from kgrag.ingest.chunking import Chunker
from kgrag.ingest.cross_lingual import complete_multilingual_blocks
from kgrag.ingest.loaders import LoadError, discover_files, legacy_document_id, load, roots_of
from kgrag.ingest.record_facets import record_facets
from kgrag.ingest.report import Failure, IngestReport, Progress, ProgressCallback, ProgressMode, drop, timed
from kgrag.ingest.revision import content_of, stamped
from kgrag.ingest.sources import Sources
from kgrag.models.base import CorpusEmbedder, Embedder
from kgrag.stores import consistency
from kgrag.stores.base import ChunkIndex, GraphWriter
from kgrag.stores.consistency import DELETED, StoreDiff, WriteJournal
from kgrag.text.scripts import is_mainly_han, is_mainly_non_latin
from kgrag.types import Chunk, Document

log = logging.getLogger(__name__)

# Documents are grouped until they hold this many searchable chunks, so the embedder sees
# full batches even when documents are short (one chunk per HotpotQA passage).
GROUP_CHUNKS = 256


def embedding_text(chunk: Chunk) -> str:
    """What the embedder sees (see ``Chunk.headed_text``)."""
    return chunk.headed_text


class IngestJob:
    """Wires the stages together. Models are passed in already loaded (or as lazy factories), so
    a run that finds nothing new never loads a model."""

    def __init__(
        self,
        chunk_index: ChunkIndex,
        graph: GraphWriter,
        chunker: Chunker,
        embedder_factory: Callable[[], Embedder],
        extractor_factory: Callable[[], object],
        journal: WriteJournal | None = None,
        metadata: MetadataSettings | None = None,
        revision: str | None = None,
        data_dir: Path | None = None,
        sources: Sources | None = None,
    ):
        """``journal`` None: one in memory (no recovery across processes; tests).
        ``data_dir``: where the folders ingested through are remembered (``kgrag.ingest.roots``).
        ``metadata``: where documents' facets are read from (``kgrag.ingest.record_facets``).
        ``revision``: stamped on each stored hash (``kgrag.ingest.revision``); a document
        stored under another one is rebuilt. None: hashes are content alone (tests).
        ``sources``: the knowledge base's kept sources, told of deletes."""
        self.metadata = metadata or MetadataSettings()
        self.revision = revision
        self.data_dir = data_dir
        self.sources = sources  # told when a document is deleted (kgrag.ingest.sources)
        if journal is None:
            from kgrag.stores.sqlite.journal import MEMORY, SqliteWriteJournal

            journal = SqliteWriteJournal(MEMORY)
        self.journal = journal
        self.chunk_index = chunk_index
        self.graph = graph
        self.chunker = chunker
        self._embedder_factory = embedder_factory
        self._extractor_factory = extractor_factory
        self._embedder: Embedder | None = None
        self._extractor: object | None = None

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self._embedder_factory()
        return self._embedder

    @property
    def extractor(self):
        # Built after glossaries are applied: its gazetteer starts from the graph's alias table.
        if self._extractor is None:
            self._extractor = self._extractor_factory()
        return self._extractor

    # -- public ----------------------------------------------------------------------------
    def run(
        self,
        paths: Sequence[str | Path],
        glossary_entities: Sequence | None = None,
        progress: ProgressMode = True,
        on_document: ProgressCallback | None = None,
        root: str | Path | None = None,
    ) -> IngestReport:
        """``progress``: draw a per-document bar on stderr (``"lines"``: print lines, for output
        that is not a terminal); ``on_document``: called as each document is written or fails;
        ``root``: the folder document ids are relative to (else the folder or glob root each
        file was found through; see ``discover_files``)."""
        report = IngestReport()
        started = time.perf_counter()
        if glossary_entities:
            self.graph.upsert_entities(list(glossary_entities))
            self._extractor = None  # its gazetteer must see the new aliases

        with timed(report, "load"):
            docs, legacy = self._load_all(paths, report, root)
        report = self._ingest(docs, report, started, progress, on_document)
        if self.data_dir is not None:
            roots.remember(self.data_dir, roots_of(paths, root))
        self._retire_legacy_ids(legacy, {d.id for d in docs}, report)
        return report

    def run_documents(self, docs: Sequence[Document], progress: ProgressMode = False,
                      on_document: ProgressCallback | None = None) -> IngestReport:
        """Ingest documents built by the caller (the HTTP API's JSON texts and uploads):
        same skip/replace by hash as ``run``."""
        report = IngestReport()
        seen: set[str] = set()
        unique = []
        for doc in docs:
            if doc.id in seen:
                report.failed.append(Failure(doc.source, f"document id {doc.id!r} given twice"))
                continue
            seen.add(doc.id)
            unique.append(doc)
        return self._ingest(unique, report, time.perf_counter(), progress, on_document)

    def _ingest(self, docs: Sequence[Document], report: IngestReport, started: float,
                progress: ProgressMode, on_document: ProgressCallback | None) -> IngestReport:
        with timed(report, "load"):
            report.store_check = self.reconcile()
            known = self.graph.document_hashes()
            for doc_id in report.store_check.mismatched:  # the stores disagree: re-process it
                known[doc_id] = DELETED
        pending: list[Document] = []
        for doc in docs:
            record_facets(doc, self.metadata)  # before the hash is compared: it may change it
            if self.revision is not None:
                doc.hash = stamped(content_of(doc.hash), self.revision)
            old = known.get(doc.id)
            if old == doc.hash:
                report.unchanged += 1
                continue
            if old is None:
                report.new.append(doc.id)
            elif content_of(old) == content_of(doc.hash):
                report.rebuilt.append(doc.id)
            else:
                report.changed.append(doc.id)
            pending.append(doc)

        tracker = Progress(len(pending), progress is True, on_document, lines=progress == "lines")
        mixed = self._bilingual(pending, report)
        try:
            for group in self._groups(pending, report, tracker):
                self._process_group(group, report, tracker, mixed)
        finally:
            tracker.close()
        if pending:
            # Bulk writes make a reader's next walk rebuild the embedded store's entity graph:
            # done here, once, with its snapshot saved, a server's first question after an
            # ingest loads that instead (docs/decisions.md, "The graph held as arrays, caught up
            # from a change log, saved as a snapshot").
            with timed(report, "prepare reads"):
                self.graph.prepare_reads(this_process=False)

        llm = getattr(self._extractor, "llm", None)
        if llm is not None:  # its cost during this run, then counting starts again
            report.llm = llm.cost.to_dict()
            llm.cost = type(llm.cost)()
        report.wall_seconds = time.perf_counter() - started
        report.totals = {**self.graph.stats(), "indexed_chunks": self.chunk_index.count(searchable_only=True)}
        return report

    def delete(self, doc_id: str) -> bool:
        """Delete a document from both stores: the graph first (the commit point), then its
        chunks. A failure of the graph half leaves it whole; of the chunk half, the journal
        entry that the next recovery finishes. False when neither store knew it."""
        with self.journal.writing():
            consistency.recover(self.journal, self.chunk_index, self.graph)
            found = consistency.delete_document(self.journal, self.chunk_index, self.graph, doc_id)
        if self.sources is not None:
            self.sources.forget(doc_id)
        return found

    def reconcile(self) -> StoreDiff:
        """Finish or discard pending writes and return what still disagrees (``mismatched``:
        re-processed when ingested). Chunks whose document the graph does not know
        (``orphaned``: a lost graph file) are left alone: only ``kgrag check --repair`` decides
        about them, rebuilding their documents from their sources (``kgrag.repair``); removed
        here, a document posted as JSON was gone for good."""
        with self.journal.writing():
            plan = consistency.recover(self.journal, self.chunk_index, self.graph)
            diff = consistency.check(self.journal, self.chunk_index, self.graph)
        if plan.roll_forward or plan.discard:
            log.warning("finished %d and discarded %d unfinished writes before the ingest",
                        len(plan.roll_forward), len(plan.discard))
        if diff.orphaned:
            log.warning("%d documents have chunks but no record in the graph (e.g. %r): "
                        "'kgrag check --repair' rebuilds them from their sources", len(diff.orphaned), diff.orphaned[0])
        return diff

    # -- stages ----------------------------------------------------------------------------
    def _load_all(self, paths: Sequence[str | Path], report: IngestReport,
                  root: str | Path | None) -> tuple[list[Document], dict[str, str]]:
        """The documents, and for each whose id an older kgrag would have written differently
        (relative to the working directory), that older id (``_retire_legacy_ids``)."""
        known = roots.remembered(self.data_dir) if self.data_dir is not None else []
        files, errors = discover_files(paths, root, known)
        report.failed.extend(Failure(str(e.path), e.reason) for e in errors)
        docs: list[Document] = []
        legacy: dict[str, str] = {}
        first_seen: dict[str, str] = {}
        for path, file_id in files:
            try:
                loaded = load(path, file_id)
            except LoadError as e:
                report.failed.append(Failure(str(e.path), e.reason))
                continue
            except Exception as e:  # a loader bug must not sink the other files
                log.exception("loader crashed on %s", path)
                report.failed.append(Failure(str(path), f"unexpected {type(e).__name__}: {e}"))
                continue
            old_file_id = legacy_document_id(path)
            for doc in loaded:
                if doc.id in first_seen:
                    report.failed.append(
                        Failure(str(path), f"document id {doc.id!r} already loaded from {first_seen[doc.id]}")
                    )
                    continue
                first_seen[doc.id] = str(path)
                docs.append(doc)
                if old_file_id != file_id and doc.id.startswith(file_id):
                    legacy[doc.id] = old_file_id + doc.id[len(file_id):]
        return docs, legacy

    def _retire_legacy_ids(self, legacy: dict[str, str], ids: set[str], report: IngestReport) -> None:
        """Documents stored under the id an older kgrag gave the same file (relative to the
        working directory, which made one file two documents) are deleted once the file is
        stored under its rooted id: the knowledge base keeps one copy, by the new id."""
        if not legacy:
            return
        known = self.graph.document_hashes()
        for new_id, old_id in legacy.items():
            # never a document this run stores (a file's old id can be another file's new one)
            if old_id in known and old_id not in ids and new_id in known:
                if self.delete(old_id):
                    report.renamed[old_id] = new_id

    def _groups(self, docs: list[Document], report: IngestReport,
                tracker: Progress) -> Iterator[list[tuple[Document, list[Chunk]]]]:
        group: list[tuple[Document, list[Chunk]]] = []
        size = 0
        for doc in docs:
            with timed(report, "chunk"):
                try:
                    chunks = self.chunker.chunk(doc)
                except Exception as e:
                    log.exception("chunker crashed on %s", doc.id)
                    report.failed.append(Failure(doc.source, f"chunking {doc.id}: {type(e).__name__}: {e}", "chunk"))
                    drop(report, doc.id)
                    tracker.document(doc.id, False, report.chunks_written)
                    continue
            for chunk in chunks:  # every chunk carries its document's facets (kgrag.facets)
                chunk.metadata.update(doc.facets)
            group.append((doc, chunks))
            size += sum(1 for c in chunks if c.searchable)
            if size >= GROUP_CHUNKS:
                yield group
                group, size = [], 0
        if group:
            yield group

    def _process_group(self, group: list[tuple[Document, list[Chunk]]], report: IngestReport,
                       tracker: Progress, mixed: bool) -> None:
        searchable = [c for _, chunks in group for c in chunks if c.searchable]
        tracker.stage("embedding", len(searchable))
        with timed(report, "embed"):
            vectors = self._embed([embedding_text(c) for c in searchable], mixed) if searchable else None
        tracker.stage("extracting entities from", len(searchable))
        with timed(report, "extract"):
            extractions = self.extractor.extract_many([[c for c in chunks if c.searchable] for _, chunks in group])
        tracker.stage("writing", len(searchable))
        offset = 0
        for (doc, chunks), extraction in zip(group, extractions, strict=True):
            n = sum(1 for c in chunks if c.searchable)
            doc_vectors = vectors[offset : offset + n] if vectors is not None else None
            offset += n
            with timed(report, "write"):
                try:
                    self._write(doc, chunks, doc_vectors, extraction)
                except Exception as e:
                    log.exception("writing %s failed", doc.id)
                    report.failed.append(Failure(doc.source, f"writing {doc.id}: {type(e).__name__}: {e}", "write"))
                    drop(report, doc.id)
                    tracker.document(doc.id, False, report.chunks_written)
                    continue
            report.chunks_written += n
            tracker.document(doc.id, True, report.chunks_written)

    def _bilingual(self, pending: Sequence[Document], report: IngestReport) -> bool:
        """Whether this job's Latin-script passages also get a multilingual vector: the knowledge
        base, these documents included, holds mainly-Chinese documents next to Latin-script ones
        (the stored ones known by their ``language`` facet). Chinese documents arriving where
        none were stored first complete the stored English chunks (``kgrag.ingest.cross_lingual``;
        before the Chinese documents are written, so a crash converges)."""
        has_han, has_latin = _scripts(pending)
        mixed = has_han and has_latin
        if not pending:
            return mixed
        embedder = self.embedder
        if not (isinstance(embedder, CorpusEmbedder) and getattr(embedder, "cross_lingual", None) == "auto"):
            return mixed
        stored_chinese = "zh" in self.chunk_index.facet_catalog().languages
        if has_han:
            if not stored_chinese:
                with timed(report, "embed"), self.journal.writing():
                    report.cross_lingual_completed = complete_multilingual_blocks(
                        self.chunk_index, embedder, embedding_text)
            return mixed
        return stored_chinese and has_latin

    def _embed(self, texts: list[str], mixed: bool):
        embedder = self.embedder
        if isinstance(embedder, CorpusEmbedder):
            return embedder.embed_corpus(texts, mixed)
        return embedder.embed_passages(texts)

    def _write(self, doc: Document, chunks: list[Chunk], vectors, extraction) -> None:
        """The write protocol (``kgrag.stores.consistency``): journal, graph (commit), chunks,
        journal done."""
        with self.journal.writing():
            with consistency.settle_on_error(self.journal, self.chunk_index, self.graph, doc.id):
                self.journal.begin(doc.id, doc.hash, chunks, vectors)
                self.graph.write_document(doc, chunks, extraction.entities, extraction.mentions,
                                          extraction.relations)
            try:
                self.chunk_index.replace_document(doc.id, chunks, vectors)
                self.journal.finish(doc.id)
            except Exception as exc:
                raise PartialWrite(
                    f"the new version is recorded in the graph, its chunks are not yet indexed "
                    f"({type(exc).__name__}: {exc}); the next ingest, server start or "
                    f"'kgrag check --repair' finishes it"
                ) from exc


class PartialWrite(StoreError):
    """A write that passed the commit point and failed after it: finished by recovery."""


def _mixed_scripts(docs: Sequence[Document]) -> bool:
    """Whether ``docs`` hold documents written mainly in Chinese next to Latin-script ones: then
    a script-routed embedder gives the Latin ones a multilingual vector too
    (``kgrag.models.routed``). Judged on each document's first few thousand characters. Han,
    not any non-Latin script: one Mongolian-script passage in an English corpus would make every
    English chunk pay for e5 (docs/decisions.md, "The routed embedder")."""
    has_han, has_latin = _scripts(docs)
    return has_han and has_latin


def _scripts(docs: Sequence[Document]) -> tuple[bool, bool]:
    """(some document is mainly Han, some is mainly Latin), each judged on its first 4,000
    characters (see ``_mixed_scripts``)."""
    has_han = has_latin = False
    for doc in docs:
        head = doc.text[:4000]
        has_han = has_han or is_mainly_han(head)
        has_latin = has_latin or not is_mainly_non_latin(head)
        if has_han and has_latin:
            break
    return has_han, has_latin
