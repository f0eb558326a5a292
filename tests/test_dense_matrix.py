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


def test_appends_into_spare_rows_leave_older_matrices_as_they_were():
    """Extending copies once with spare rows; later appends write into them (no copy of the
    whole matrix) while every older matrix still answers for its own rows only, and a second
    extension of an older matrix (a branch) copies instead of writing over the newer one."""
    rng = np.random.default_rng(3)
    dim = 769
    batches = [_rows(rng, n, dim, zero_columns=[(384, 768)]) for n in (40, 3, 1, 2)]
    built = [DenseMatrix.build(range(k, k + len(b)), [f"r{k + i}" for i in range(len(b))], b)
             for k, b in zip(np.cumsum([0, 40, 3, 1]), batches, strict=True)]
    first = built[0].extended([built[1]])  # copied, with room
    buffer = first.blocks[0].base
    second = first.extended([built[2]])
    third = second.extended([built[3]])
    assert second.blocks[0].base is buffer and third.blocks[0].base is buffer  # written in place
    branch = first.extended([built[3]])  # from an older matrix: must not overwrite `second`'s row
    assert branch.blocks[0].base is not buffer
    query = rng.standard_normal(dim).astype(np.float32)
    query /= np.linalg.norm(query)
    for matrix, rows in ((first, batches[:2]), (second, batches[:3]), (third, batches),
                         (branch, [batches[0], batches[1], batches[3]])):
        assert len(matrix) == sum(len(r) for r in rows)
        assert np.allclose(matrix.scores(query), _reference(np.concatenate(rows), query), atol=1e-5)
    assert third.ids[-1] == "r45" and list(third.pks) == list(range(46))
    zh_row = _rows(rng, 1, dim, zero_columns=[(0, 384)])
    widened = third.extended([DenseMatrix.build([46], ["zh"], zh_row)])  # a block the buffers lack: copied
    assert widened.blocks[0].base is not buffer and 3 * BLOCK in widened.blocks
    assert np.allclose(widened.scores(query), _reference(np.concatenate([*batches, zh_row]), query), atol=1e-5)
    assert np.allclose(third.scores(query), _reference(np.concatenate(batches), query), atol=1e-5)


def test_a_matrix_built_with_spare_rows_takes_its_first_append_in_place():
    rng = np.random.default_rng(4)
    rows, more = _rows(rng, 30, 384), _rows(rng, 2, 384)
    whole = DenseMatrix.build(range(30), [f"c{i}" for i in range(30)], rows, spare=True)
    grown = whole.extended([DenseMatrix.build([30, 31], ["n0", "n1"], more)])
    assert grown.blocks[0].base is whole.blocks[0].base and len(whole) == 30 and len(grown) == 32
    query = rng.standard_normal(384).astype(np.float32)
    query /= np.linalg.norm(query)
    assert np.allclose(grown.scores(query), _reference(np.concatenate([rows, more]), query), atol=1e-5)
    assert np.allclose(whole.scores(query), _reference(rows, query), atol=1e-5)
