"""The copy: chunks travel with their vectors, the graph document by document through
``GraphExport.export_document``.

Idempotent: a chunk transfer replaces each document's chunks in the target; a graph transfer
skips documents whose hash the target already has (``force`` rewrites them) and writes the
others atomically, so an interrupted run converges when run again. A verification step
compares the counts of source and target.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm import tqdm

from kgrag.errors import StoreError
from kgrag.stores.base import ChunkIndex, GraphStore
from kgrag.transfer.plan import TransferPlan


# -- the copy ----------------------------------------------------------------------------------
@dataclass
class HalfReport:
    """One half's work: counts written, seconds, and the verification."""

    written: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    source_counts: dict[str, Any] = field(default_factory=dict)
    target_counts: dict[str, Any] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)

    def rate(self, what: str) -> float:
        return self.written.get(what, 0) / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"written": self.written, "seconds": round(self.seconds, 3), "source": self.source_counts,
                "target": self.target_counts, "mismatches": self.mismatches}


def transfer_graph(source: GraphStore, target: GraphStore, *, force: bool = False, progress: bool = False) -> HalfReport:
    report = HalfReport(written={"documents": 0, "skipped": 0, "entities": 0, "mentions": 0, "relations": 0})
    start = time.perf_counter()
    curated = source.curated_entities()
    if curated:
        target.upsert_entities(curated)
    report.written["curated_entities"] = len(curated)
    have = {} if force else {d.id: d.hash for d in target.list_documents()}
    documents = source.list_documents()
    for doc in tqdm(documents, desc="graph", unit="doc", disable=not progress):
        if have.get(doc.id) == doc.hash and doc.hash:
            report.written["skipped"] += 1
            continue
        content = source.export_document(doc.id)
        if content is None:  # deleted in the source meanwhile
            continue
        target.write_document(*content)
        report.written["documents"] += 1
        report.written["entities"] += len(content.entities)
        report.written["mentions"] += len(content.mentions)
        report.written["relations"] += len(content.relations)
    report.seconds = time.perf_counter() - start
    report.source_counts, report.target_counts = source.stats(), target.stats()
    report.mismatches = _differences(report.source_counts, report.target_counts)
    source_ids, target_ids = {d.id for d in documents}, {d.id for d in target.list_documents()}
    if target_ids - source_ids:
        report.mismatches.append(f"target has {len(target_ids - source_ids)} document(s) the source lacks, "
                                 f"e.g. {sorted(target_ids - source_ids)[:3]}")
    return report


def transfer_chunks(source: ChunkIndex, target: ChunkIndex, *, batch_size: int = 500, progress: bool = False) -> HalfReport:
    report = HalfReport(written={"chunks": 0, "documents": 0})
    start = time.perf_counter()
    seen: set[str] = set()
    with tqdm(total=source.count(), desc="chunks", unit="chunk", disable=not progress) as bar:
        for batch in _batched(source.iter_chunks(batch_size), batch_size):
            # A document's first appearance replaces whatever the target held for it, so a
            # document that changed since an earlier transfer leaves no stale chunk behind.
            for doc_id in sorted({c.doc_id for c, _ in batch} - seen):
                target.delete_document(doc_id)
                seen.add(doc_id)
            chunks = [c for c, _ in batch]
            target.upsert(chunks, _searchable_vectors(batch))
            report.written["chunks"] += len(chunks)
            bar.update(len(chunks))
    report.written["documents"] = len(seen)
    report.seconds = time.perf_counter() - start
    report.source_counts, report.target_counts = _chunk_counts(source), _chunk_counts(target)
    report.mismatches = _differences(report.source_counts, report.target_counts)
    extra = target.document_ids() - source.document_ids()
    if extra:
        report.mismatches.append(f"target has chunks of {len(extra)} document(s) the source lacks, e.g. {sorted(extra)[:3]}")
    return report


def _batched(items: Iterable, size: int) -> Iterable[list]:
    batch: list = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _searchable_vectors(batch: Sequence[tuple[Any, np.ndarray | None]]) -> np.ndarray | None:
    vectors = [v for c, v in batch if c.searchable]
    if not vectors or all(v is None for v in vectors):
        return None
    if any(v is None for v in vectors):
        missing = next(c.id for c, v in batch if c.searchable and v is None)
        raise StoreError(f"transfer: searchable chunk {missing!r} has no vector while others do")
    return np.vstack([v for v in vectors if v is not None]).astype(np.float32)


def _chunk_counts(index: ChunkIndex) -> dict[str, int]:
    return {"chunks": index.count(), "searchable": index.count(searchable_only=True),
            "documents": len(index.document_ids())}


def _differences(source: dict[str, Any], target: dict[str, Any]) -> list[str]:
    return [f"{k}: source {source.get(k)} != target {target.get(k)}"
            for k in sorted(set(source) | set(target)) if source.get(k) != target.get(k)]


@dataclass
class TransferReport:
    plan: TransferPlan
    graph: HalfReport | None = None
    chunks: HalfReport | None = None

    @property
    def ok(self) -> bool:
        return not any(h.mismatches for h in (self.graph, self.chunks) if h is not None)

    def graph_rates(self) -> dict[str, float]:
        """Distinct entities / edges in the target per second of the graph half (meaningful for
        a first transfer into an empty target), and evidence rows written per second."""
        g = self.graph
        if g is None or g.seconds <= 0:
            return {}
        return {"entities_per_s": round(g.target_counts.get("entities", 0) / g.seconds, 1),
                "relations_per_s": round(g.target_counts.get("relations", 0) / g.seconds, 1),
                "relation_evidence_written_per_s": round(g.rate("relations"), 1),
                "documents_written_per_s": round(g.rate("documents"), 2)}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok, "notes": self.plan.notes}
        if self.graph is not None:
            out["graph"] = {**self.graph.to_dict(), "from": self.plan.source.graph_store, "to": self.plan.target.graph_store,
                            **self.graph_rates()}
        if self.chunks is not None:
            out["chunks"] = {**self.chunks.to_dict(), "from": self.plan.source.chunk_store, "to": self.plan.target.chunk_store,
                             "chunks_per_s": round(self.chunks.rate("chunks"), 1)}
        return out


def run_transfer(plan: TransferPlan, *, force: bool = False, progress: bool = False) -> TransferReport:
    """Chunks first, then the graph (the ingest's order: a document whose hash is in the graph
    has its chunks in place)."""
    from kgrag.stores.factory import build_chunk_index, build_graph_store

    report = TransferReport(plan)
    opened: list = []
    try:
        if plan.chunks:
            chunks_from = build_chunk_index(plan.source)
            opened.append(chunks_from)
            chunks_to = build_chunk_index(plan.target)
            opened.append(chunks_to)
            report.chunks = transfer_chunks(chunks_from, chunks_to, progress=progress)
        if plan.graph:
            graph_from = build_graph_store(plan.source)
            opened.append(graph_from)
            graph_to = build_graph_store(plan.target)
            opened.append(graph_to)
            report.graph = transfer_graph(graph_from, graph_to, force=force, progress=progress)
    finally:
        for store in opened:
            store.close()
    return report
