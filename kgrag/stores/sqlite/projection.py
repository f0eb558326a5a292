"""Candidates for a large dense matrix's search: every row projected onto its principal
directions, scanned in a quarter of the numbers, and the best few thousand rescored exactly.

Exact search reads every stored number per question (at 117k searchable chunks 45 M floats,
its product ~7 ms alone and a contended memory bus beside the graph walk); the projection reads 96 per row.
96 dimensions and 2,000 candidates lose almost nothing of the exact top 10 and top 50 at a
quarter of the time (``benchmarks/dense_recall.py``; docs/decisions.md, "Exact dense search up
to 50,000 vectors"). A found row keeps its exact score, so the order among the rows found is the
exact order.

The directions are fitted once per matrix on a fixed sample of its rows (deterministic: the
same rows give the same directions); rows appended later (``extended``) are projected onto the
same directions until the matrix has grown by half (``REFIT_GROWTH``) since the fit, when the
projection is dropped and fitted again at the next search — a knowledge base that only grows by
appends (never reloaded whole) would otherwise be searched through the directions of its first
few thousand rows, whose topics the new documents need not share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DIMS = 96
CANDIDATES = 2000
FIT_SAMPLE = 20_000  # rows the directions are fitted on
REFIT_GROWTH = 1.5  # rows now / rows at the fit from which the directions are fitted again


@dataclass(frozen=True)
class Projection:
    """``rows``: every row of the columns it was fitted for, projected (float32, n × DIMS);
    ``fitted``: how many rows the matrix held when the directions were fitted."""

    basis: np.ndarray  # (columns, DIMS) float32
    rows: np.ndarray
    fitted: int

    @staticmethod
    def fit(blocks: list[np.ndarray], dims: int = DIMS) -> Projection:
        """Principal directions of the columns of ``blocks`` side by side (each rows × its
        columns), centred on a fixed sample. The blocks are never joined whole: at 117k rows
        that 180 MB copy took 0.02–2 s on this machine, the fit itself 0.2 s."""
        n = len(blocks[0])
        pick = np.sort(np.random.default_rng(0).choice(n, FIT_SAMPLE, replace=False)) if n > FIT_SAMPLE else np.arange(n)
        sample = np.hstack([block[pick] for block in blocks]).astype(np.float64)
        sample -= sample.mean(axis=0)
        # The covariance's eigenvectors are the SVD's directions: 0.1 s instead of 1 s at 20k × 384.
        values, vectors = np.linalg.eigh(sample.T @ sample)
        keep = np.argsort(-values, kind="stable")[: min(dims, len(sample))]
        basis = np.ascontiguousarray(vectors[:, keep], dtype=np.float32)
        return Projection(basis, _project(blocks, basis), n)

    def outgrown(self, added: int) -> bool:
        """Whether ``added`` more rows reach ``REFIT_GROWTH`` × the rows it was fitted on."""
        return len(self.rows) + added >= REFIT_GROWTH * self.fitted

    def extended(self, more: list[np.ndarray]) -> Projection | None:
        """This projection with the rows of ``more`` (blocks of the same columns) projected onto
        the same directions; None once ``outgrown`` (the caller fits again)."""
        if self.outgrown(len(more[0])):
            return None
        return Projection(self.basis, np.concatenate([self.rows, _project(more, self.basis)]), self.fitted)

    def candidates(self, query: np.ndarray, n: int = CANDIDATES) -> np.ndarray:
        """Row indices (ascending) of the ``n`` rows whose projections score highest with
        ``query``'s (``query``: the fitted columns' part of a unit vector)."""
        approx = np.einsum("ij,j->i", self.rows, query @ self.basis)
        if n >= len(approx):
            return np.arange(len(approx))
        return np.sort(np.argpartition(-approx, n - 1)[:n])


def _project(blocks: list[np.ndarray], basis: np.ndarray) -> np.ndarray:
    """The rows of ``blocks`` side by side, times ``basis``: block by block."""
    out = np.zeros((len(blocks[0]), basis.shape[1]), dtype=np.float32)
    column = 0
    for block in blocks:
        out += block @ basis[column : column + block.shape[1]]
        column += block.shape[1]
    return out
