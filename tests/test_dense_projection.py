"""Dense search above ``dense_approx_from`` rows: candidates from a projection onto the matrix's
principal directions, rescored exactly. On vectors with structure (as embeddings have: here a
few dozen latent directions plus noise, in the routed layout's MiniLM block) it finds the exact
top hits with their exact scores; a filter, a small matrix, or ``None`` search exactly; rows
appended later are projected too, until the matrix has grown by half, when the directions are
fitted again; the store passes its setting through."""

from __future__ import annotations

import numpy as np
import pytest

from kgrag.stores.sqlite.chunks import SqliteChunkIndex
from kgrag.stores.sqlite.dense import DenseMatrix
from kgrag.stores.sqlite.projection import CANDIDATES, REFIT_GROWTH
from kgrag.types import Chunk

DIM = 769  # the routed layout: MiniLM 384 | e5 384 | pad


def _embeddings(rng, n, latent=40):
    """Rows with structure: a mix of ``latent`` directions plus a little noise, MiniLM block only."""
    directions = rng.standard_normal((latent, 384))
    rows = np.zeros((n, DIM), dtype=np.float32)
    rows[:, :384] = rng.standard_normal((n, latent)) ** 3 @ directions + 0.3 * rng.standard_normal((n, 384))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def _query(rng, rows):
    q = rows[rng.integers(len(rows))].copy()
    q[:384] += 0.5 * rng.standard_normal(384).astype(np.float32) / np.sqrt(384)
    return q / np.linalg.norm(q)


def test_projected_search_finds_the_exact_top_hits_with_exact_scores():
    rng = np.random.default_rng(7)
    rows = _embeddings(rng, 6 * CANDIDATES)
    matrix = DenseMatrix.build(np.arange(len(rows)), [f"c{i}" for i in range(len(rows))], rows)
    shares = []
    for _ in range(40):
        q = _query(rng, rows)
        exact = matrix.search(q, 10)
        approx = matrix.search(q, 10, approx_from=1)
        assert approx[0] == exact[0]  # the best hit, and its score, exactly
        truth = dict(exact)
        shares.append(len(truth.keys() & {row for row, _ in approx}) / 10)
        for row, score in approx:  # every score is the row's exact cosine
            assert score == pytest.approx(float(rows[row] @ q), abs=1e-5)
    assert np.mean(shares) >= 0.97
    assert matrix._projections, "the projection was fitted and kept"


def test_a_filter_a_small_matrix_or_none_searches_exactly():
    rng = np.random.default_rng(3)
    rows = _embeddings(rng, 3 * CANDIDATES)
    matrix = DenseMatrix.build(np.arange(len(rows)), [f"c{i}" for i in range(len(rows))], rows)
    q = _query(rng, rows)
    brute = np.argsort(-(rows @ q), kind="stable")[:10].tolist()
    assert [r for r, _ in matrix.search(q, 10)] == brute
    assert [r for r, _ in matrix.search(q, 10, approx_from=len(rows) + 1)] == brute
    allowed = np.arange(0, len(rows), 7)
    kept = allowed[np.argsort(-(rows[allowed] @ q), kind="stable")[:10]].tolist()
    assert [r for r, _ in matrix.search(q, 10, allowed, approx_from=1)] == kept
    assert not matrix._projections  # nothing was projected for these


def test_rows_appended_after_the_fit_are_projected_and_found():
    rng = np.random.default_rng(11)
    rows = _embeddings(rng, 3 * CANDIDATES)
    matrix = DenseMatrix.build(np.arange(len(rows)), [f"c{i}" for i in range(len(rows))], rows, spare=True)
    matrix.search(_query(rng, rows), 10, approx_from=1)  # fits the projection
    new = _embeddings(np.random.default_rng(99), 5)
    grown = matrix.extended([DenseMatrix.build(np.arange(len(rows), len(rows) + 5), [f"n{i}" for i in range(5)], new)])
    assert grown._projections and len(next(iter(grown._projections.values())).rows) == len(rows) + 5
    for i in range(5):
        best_row, score = grown.search(new[i], 1, approx_from=1)[0]
        assert grown.ids[best_row] == f"n{i}" and score == pytest.approx(1.0, abs=1e-5)


def test_a_matrix_grown_by_half_since_the_fit_is_fitted_again_on_its_new_rows():
    """New documents on other topics: the first rows' directions do not span them. Below the
    growth limit the fit is kept (same basis object); at it the next search fits again, and the
    new topic's rows are found through the new directions."""
    rng = np.random.default_rng(13)
    rows = _embeddings(rng, 2 * CANDIDATES)
    ids = [f"c{i}" for i in range(len(rows))]
    matrix = DenseMatrix.build(np.arange(len(rows)), ids, rows, spare=True)
    matrix.search(_query(rng, rows), 10, approx_from=1)
    (fitted,) = matrix._projections.values()
    assert fitted.fitted == len(rows)

    def grow(base, new, tag):
        return base.extended([DenseMatrix.build(np.arange(len(base), len(base) + len(new)),
                                                [f"{tag}{i}" for i in range(len(new))], new)])

    few = _embeddings(np.random.default_rng(1), int(len(rows) * (REFIT_GROWTH - 1)) - 10)
    kept = grow(matrix, few, "k")
    (still,) = kept._projections.values()
    assert still.basis is fitted.basis and still.fitted == len(rows) and len(still.rows) == len(kept)

    other_topic = _embeddings(np.random.default_rng(2), 20)
    grown = grow(kept, other_topic, "n")
    assert not grown._projections, "grown by half: the old directions are dropped"
    best_row, score = grown.search(other_topic[3], 1, approx_from=1)[0]
    (refitted,) = grown._projections.values()
    assert refitted.fitted == len(grown) and refitted.basis is not fitted.basis
    assert grown.ids[best_row] == "n3" and score == pytest.approx(1.0, abs=1e-5)


def test_the_store_searches_through_the_projection_from_its_setting(tmp_path):
    rng = np.random.default_rng(5)
    rows = _embeddings(rng, 3 * CANDIDATES)
    chunks = [Chunk(id=f"d#{i}", doc_id="d", text=f"passage {i}", ordinal=i) for i in range(len(rows))]
    writer = SqliteChunkIndex(tmp_path / "chunks.sqlite")
    writer.upsert(chunks, rows)
    writer.close()
    q = _query(rng, rows)
    exact = SqliteChunkIndex(tmp_path / "chunks.sqlite")
    projected = SqliteChunkIndex(tmp_path / "chunks.sqlite", dense_approx_from=1000)
    assert projected.search_dense(q, 5)[0] == exact.search_dense(q, 5)[0]
    with projected._db.read("test") as conn:
        assert projected._dense_matrix(conn)._projections  # it went through the projection
    with exact._db.read("test") as conn:
        assert not exact._dense_matrix(conn)._projections
    exact.close()
    projected.close()
