"""The embedded chunk index's dense vectors in memory, searched exactly (cosine over every row).

Rows are L2-normalized and held in column blocks of ``BLOCK`` columns, each C-contiguous; a block
that is zero in every row is not held at all, and a query multiplies only the blocks where it is
non-zero. The default embedder's vectors are ``[MiniLM 384 | e5 384 | pad 1]``
(``kgrag.models.routed``) and a query fills one model's block: an English corpus holds no e5
columns, and each query reads 384 of the 769 numbers per row instead of all of them. Measured by
``benchmarks/dense_scale.py`` (docs/decisions.md, "Exact dense search up to 50,000 vectors").
Nothing here knows that layout: any zero column range is skipped the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kgrag.stores.sqlite.projection import CANDIDATES, Projection

BLOCK = 128  # columns per block: 769 = 6 × 128 + 1, so each model's 384 columns are 3 blocks


GROWTH = 1.1  # spare rows kept when a matrix is extended by copying: 10% (a 100k base: ~13k rows)


@dataclass
class _Spare:
    """Block buffers with room past the rows in use; ``filled``: rows written so far. Only the
    matrix whose length is ``filled`` may append in place (one writer per buffer)."""

    buffers: dict[int, np.ndarray]
    capacity: int
    filled: int


@dataclass(frozen=True)
class DenseMatrix:
    """Searchable chunks' vectors (rows L2-normalized) with their chunk pk and id per row."""

    pks: np.ndarray  # int64, one per row
    ids: list[str]
    dim: int
    blocks: dict[int, np.ndarray]  # first column → float32 (rows, ≤ BLOCK); all-zero blocks left out
    _held: dict[tuple, bool] = field(default_factory=dict, repr=False, compare=False)  # holds_columns answers
    _spare: _Spare | None = field(default=None, repr=False, compare=False)  # room to append into
    # block starts a query fills → its columns' projection (``search`` with ``approx_from``)
    _projections: dict[tuple[int, ...], Projection] = field(default_factory=dict, repr=False, compare=False)
    _fitting: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @staticmethod
    def build(pks: Sequence[int], ids: list[str], vectors: np.ndarray, spare: bool = False) -> DenseMatrix:
        """``spare``: keep ``GROWTH`` spare rows, so the next appends are written in place (a
        knowledge base's whole matrix; not the few rows of one write)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        n = vectors.shape[0]
        norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))[:, None]
        norms[norms == 0] = 1.0  # a zero vector stays zero (scores 0) instead of NaN
        unit = bool(np.all(np.abs(norms - 1.0) < 1e-4))  # embedders' rows: no division needed
        capacity = max(n, int(n * GROWTH)) if spare else n
        buffers = {}
        for start in range(0, vectors.shape[1], BLOCK):
            block = vectors[:, start : start + BLOCK]
            if block.any():  # one pass per block, then one copy: the load is memory-bound
                full = np.empty((capacity, block.shape[1]), dtype=np.float32)
                full[n:] = 0.0
                if unit:
                    full[:n] = block
                else:
                    np.divide(block, norms, out=full[:n])
                buffers[start] = full
        blocks = {s: full[:n] for s, full in buffers.items()}
        held = _Spare(buffers, capacity, n) if spare else None
        return DenseMatrix(np.asarray(pks, dtype=np.int64), ids, vectors.shape[1], blocks, _spare=held)

    def __len__(self) -> int:
        return len(self.ids)

    def extended(self, more: list[DenseMatrix]) -> DenseMatrix:
        """This matrix with ``more``'s rows after its own; ``self`` is left as it was. The
        blocks keep spare rows (``GROWTH``): appending where they fit writes into them instead
        of copying the whole matrix (at 50k passages the copy was 0.47 s of a 0.5 s catch-up
        after another process's one-document ingest). Rows past a matrix's length are never
        read through it, so an older matrix sharing the buffers still answers as before."""
        parts = [self, *more]
        n = sum(len(p) for p in parts)
        pks = np.concatenate([p.pks for p in parts])
        ids = [i for p in parts for i in p.ids]
        starts = sorted({s for p in parts for s in p.blocks})
        spare = self._spare
        if spare is not None and spare.filled == len(self) and set(starts) <= set(self.blocks) \
                and n <= spare.capacity:
            for start, full in spare.buffers.items():
                row = len(self)
                for p in more:
                    full[row : row + len(p)] = p.blocks.get(start, 0.0)
                    row += len(p)
            spare.filled = n
            return DenseMatrix(pks, ids, self.dim, {s: full[:n] for s, full in spare.buffers.items()}, _spare=spare,
                               _projections=self._projected(more))
        capacity = max(n, int(n * GROWTH))
        buffers = {}
        for start in starts:
            width = min(BLOCK, self.dim - start)
            full = np.zeros((capacity, width), dtype=np.float32)
            row = 0
            for p in parts:
                if start in p.blocks:
                    full[row : row + len(p)] = p.blocks[start]
                row += len(p)
            buffers[start] = full
        spare = _Spare(buffers, capacity, n)
        return DenseMatrix(pks, ids, self.dim, {s: full[:n] for s, full in buffers.items()}, _spare=spare,
                           _projections=self._projected(more))

    def _projected(self, more: list[DenseMatrix]) -> dict[tuple[int, ...], Projection]:
        """This matrix's projections with ``more``'s rows projected onto the same directions
        (those the rows have outgrown are left out: fitted again at the next search)."""
        out = {}
        added = sum(len(p) for p in more)
        for starts, projection in self._projections.items():
            if projection.outgrown(added):
                continue  # not worth gathering the new rows' blocks
            grown = projection.extended([np.concatenate([
                p.blocks[s] if s in p.blocks else np.zeros((len(p), min(BLOCK, self.dim - s)), dtype=np.float32)
                for p in more]) for s in starts])
            if grown is not None:
                out[starts] = grown
        return out

    def scores(self, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Cosine of every row with ``query`` (a unit vector, or zero); of ``rows`` only, in their
        order, when given."""
        out = np.zeros(len(self) if rows is None else len(rows), dtype=np.float32)
        for start, part in self._filled(query):
            block = self.blocks[start] if rows is None else self.blocks[start][rows]
            # einsum, not `@`: a matrix-vector product through OpenBLAS wakes its thread
            # pool, which on a busy machine costs a scheduler tick (~8 ms measured on 2
            # cores) for 0.1 ms of work.
            out += np.einsum("ij,j->i", block, part)
        return out

    def _filled(self, query: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """(first column, the query's part) of each held block where ``query`` is non-zero."""
        parts = ((start, query[start : start + block.shape[1]]) for start, block in self.blocks.items())
        return [(start, part) for start, part in parts if part.any()]

    def search(self, query: np.ndarray, k: int, allowed: np.ndarray | None = None,
               approx_from: int | None = None) -> list[tuple[int, float]]:
        """The ``k`` best rows by cosine with ``query`` (a unit vector, or zero) as (row, score),
        best first. ``allowed``: the chunk pks a filter lets through (searched exactly).
        ``approx_from``: a matrix of this many rows or more takes its candidates from a
        projection of the query's columns (``kgrag.stores.sqlite.projection``: recall@50 99.7 %
        at 117k rows) and scores them exactly; None: always exact."""
        if allowed is None and approx_from is not None and len(self) >= approx_from and k < CANDIDATES:
            if filled := self._filled(query):
                projection = self._projection(tuple(start for start, _ in filled))
                rows = projection.candidates(np.concatenate([part for _, part in filled]))
                return _best(rows, self.scores(query, rows), k)
        scores = self.scores(query)
        rows = np.arange(len(scores)) if allowed is None else np.flatnonzero(np.isin(self.pks, allowed))
        return _best(rows, scores[rows], k)

    def _projection(self, starts: tuple[int, ...]) -> Projection:
        """The projection of the columns of blocks ``starts``, fitted on first use (0.2 s at 117k
        rows; one thread fits, the others wait for it)."""
        held = self._projections.get(starts)
        if held is None:
            with self._fitting:
                held = self._projections.get(starts)
                if held is None:
                    held = self._projections[starts] = Projection.fit([self.blocks[s] for s in starts])
        return held

    def holds_columns(self, *ranges: tuple[int, int]) -> bool:
        """Whether some row is non-zero in each of the column ranges [start, stop). Answers are
        cached: the matrix is rebuilt, not changed, when the stored vectors change."""
        if ranges not in self._held:
            rows = [self._rows_holding(start, stop) for start, stop in ranges]
            self._held[ranges] = bool(rows) and bool(np.logical_and.reduce(rows).any())
        return self._held[ranges]

    def _rows_holding(self, start: int, stop: int) -> np.ndarray:
        out = np.zeros(len(self), dtype=bool)
        for s, block in self.blocks.items():
            if s < stop and start < s + block.shape[1]:
                out |= np.any(block[:, max(0, start - s) : stop - s] != 0, axis=1)
        return out

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.blocks.values())


def _best(rows: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(row, score) of the ``k`` highest ``scores`` (one per row of ``rows``), best first."""
    if len(rows) > k:
        keep = np.argpartition(-scores, k - 1)[:k]
        rows, scores = rows[keep], scores[keep]
    order = np.argsort(-scores, kind="stable")
    return list(zip(rows[order].tolist(), scores[order].tolist(), strict=True))


def matrix_of_rows(rows: Sequence[tuple[int, str, bytes]], spare: bool = False) -> DenseMatrix:
    """(pk, chunk id, float32 vector bytes) rows, in pk order → a DenseMatrix."""
    dim = len(rows[0][2]) // 4
    vectors = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(-1, dim)
    return DenseMatrix.build([r[0] for r in rows], [r[1] for r in rows], vectors, spare=spare)
