"""The embedded chunk index's dense vectors in memory, searched exactly (cosine over every row).

Rows are L2-normalized and held in column blocks of ``BLOCK`` columns, each C-contiguous; a
block that is zero in every row is not held at all, and a query multiplies only the blocks
where it is non-zero. The default embedder's vectors are ``[MiniLM 384 | e5 384 | pad 1]``
(``kgrag.models.routed``) and a query fills one model's block: an English corpus holds no e5
columns, and each query reads 384 of the 769 numbers per row instead of all of them. Measured
by ``benchmarks/dense_scale.py`` (README "Sizing"). Nothing here knows that layout: any zero
column range is skipped the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

BLOCK = 128  # columns per block: 769 = 6 × 128 + 1, so each model's 384 columns are 3 blocks


@dataclass(frozen=True)
class DenseMatrix:
    """Searchable chunks' vectors (rows L2-normalized) with their chunk pk and id per row."""

    pks: np.ndarray  # int64, one per row
    ids: list[str]
    dim: int
    blocks: dict[int, np.ndarray]  # first column → float32 (rows, ≤ BLOCK); all-zero blocks left out
    _held: dict[tuple, bool] = field(default_factory=dict, repr=False, compare=False)  # holds_columns answers

    @staticmethod
    def build(pks: Sequence[int], ids: list[str], vectors: np.ndarray) -> DenseMatrix:
        vectors = np.asarray(vectors, dtype=np.float32)
        norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))[:, None]
        norms[norms == 0] = 1.0  # a zero vector stays zero (scores 0) instead of NaN
        unit = bool(np.all(np.abs(norms - 1.0) < 1e-4))  # embedders' rows: no division needed
        blocks = {}
        for start in range(0, vectors.shape[1], BLOCK):
            block = vectors[:, start : start + BLOCK]
            if block.any():  # one pass per block, then one copy: the load is memory-bound
                blocks[start] = np.ascontiguousarray(block) if unit else block / norms
        return DenseMatrix(np.asarray(pks, dtype=np.int64), ids, vectors.shape[1], blocks)

    def __len__(self) -> int:
        return len(self.ids)

    def extended(self, more: list[DenseMatrix]) -> DenseMatrix:
        parts = [self, *more]
        starts = sorted({s for p in parts for s in p.blocks})
        blocks = {}
        for start in starts:
            width = min(BLOCK, self.dim - start)
            blocks[start] = np.concatenate([
                p.blocks.get(start, np.zeros((len(p), width), dtype=np.float32)) for p in parts
            ])
        return DenseMatrix(np.concatenate([p.pks for p in parts]), [i for p in parts for i in p.ids], self.dim, blocks)

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine of every row with ``query`` (a unit vector, or zero)."""
        out = np.zeros(len(self), dtype=np.float32)
        for start, block in self.blocks.items():
            part = query[start : start + block.shape[1]]
            if part.any():
                # einsum, not `@`: a matrix-vector product through OpenBLAS wakes its thread
                # pool, which on a busy machine costs a scheduler tick (~8 ms measured on 2
                # cores) for 0.1 ms of work.
                out += np.einsum("ij,j->i", block, part)
        return out

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
