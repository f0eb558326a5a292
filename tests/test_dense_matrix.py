"""The embedded index's in-memory dense matrix: column blocks that are zero everywhere are not
held, and scores equal the plain product over the full normalized matrix (the reference)."""

from __future__ import annotations

import numpy as np

from kgrag.stores.sqlite.dense import BLOCK, DenseMatrix


def _rows(rng, n, dim, zero_columns=()):
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    for a, b in zero_columns:
        rows[:, a:b] = 0.0
    return rows


def _reference(rows, query):
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (rows / norms) @ query


def test_zero_column_blocks_are_not_held_and_scores_equal_the_full_product():
    rng = np.random.default_rng(1)
    dim = 769  # the routed layout: [384 | 384 | 1]
    rows = _rows(rng, 50, dim, zero_columns=[(384, 768)])  # English chunks: no e5 block
    matrix = DenseMatrix.build(range(50), [f"c{i}" for i in range(50)], rows)
    assert sorted(matrix.blocks) == [0, BLOCK, 2 * BLOCK, 6 * BLOCK]  # 384 = 3 blocks, then the pad
    assert matrix.nbytes == 50 * (384 + 1) * 4
    for query in (_rows(rng, 1, dim, [(384, 769)])[0], _rows(rng, 1, dim, [(0, 384), (768, 769)])[0]):
        query /= np.linalg.norm(query)
        assert np.allclose(matrix.scores(query), _reference(rows, query), atol=1e-5)


def test_extending_with_rows_that_fill_other_blocks_keeps_every_row_right():
    rng = np.random.default_rng(2)
    dim = 769
    english = _rows(rng, 30, dim, zero_columns=[(384, 768)])
    chinese = _rows(rng, 20, dim, zero_columns=[(0, 384)])
    zero = np.zeros((1, dim), dtype=np.float32)
    matrix = DenseMatrix.build(range(30), [f"e{i}" for i in range(30)], english).extended([
        DenseMatrix.build(range(30, 50), [f"z{i}" for i in range(20)], chinese),
        DenseMatrix.build([50], ["empty"], zero),
    ])
    everything = np.concatenate([english, chinese, zero])
    assert len(matrix) == 51 and list(matrix.pks) == list(range(51)) and matrix.ids[-1] == "empty"
    query = rng.standard_normal(dim).astype(np.float32)
    query /= np.linalg.norm(query)
    assert np.allclose(matrix.scores(query), _reference(everything, query), atol=1e-5)
    assert matrix.scores(np.zeros(dim, dtype=np.float32)).tolist() == [0.0] * 51
