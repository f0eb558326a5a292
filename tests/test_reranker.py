"""Reranker mechanics on a real cross-encoder directory built at test time (``cross_encoder_dir``:
the shipped MiniLM encoder with a seeded, untrained one-logit head).

The head is untrained, so these tests check loading, batching, order and agreement with a plain
transformers forward pass, never ranking quality.

Both loaders run on the same directory: FlagEmbedding's ``FlagReranker`` loads any encoder-only
sequence-classification directory, so it is exercised directly; which loader ``build_reranker``
picks is tested through a link named like a bge-reranker to that same directory.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading

import pytest

from kgrag.config import RetrievalSettings
from kgrag.errors import ModelError
from kgrag.models.base import Reranker
from kgrag.models.reranker import (
    CrossEncoderReranker,
    FlagEmbeddingReranker,
    RerankerError,
    build_reranker,
    is_bge_reranker,
)
from tests.conftest import hotpot_records

QUESTION = "Which magazine was started first, Arthur's Magazine or First for Women?"


@pytest.fixture(scope="module")
def passages() -> list[str]:
    # Real passages of varied length, plus one far over 512 tokens (truncation) and an empty one.
    texts = [r["text"] for r in hotpot_records(8)]
    return texts + [" ".join(texts * 2), ""]


@pytest.fixture(scope="module")
def snippets() -> list[str]:
    """Many short real texts of varied length (cheap enough for batch size 1)."""
    return [r["text"][: 40 + 7 * i] for i, r in enumerate(hotpot_records(40))]


@pytest.fixture(scope="module")
def cross_encoder(cross_encoder_dir):
    return CrossEncoderReranker(cross_encoder_dir, batch_size=32)


@pytest.fixture(scope="module")
def flag(cross_encoder_dir):
    return FlagEmbeddingReranker(cross_encoder_dir, batch_size=32)


@pytest.fixture(scope="module")
def reference_scores(cross_encoder_dir, passages):
    """Logits of a plain transformers forward pass, one pair at a time (no padding at all)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(cross_encoder_dir))
    model = AutoModelForSequenceClassification.from_pretrained(str(cross_encoder_dir)).eval()
    out = []
    with torch.inference_mode():
        for text in passages:
            enc = tokenizer(QUESTION, text, truncation=True, max_length=512, return_tensors="pt")
            out.append(float(model(**enc).logits.view(-1)[0]))
    return out


def test_no_path_means_no_reranker():
    assert build_reranker(RetrievalSettings()) is None


def test_both_loaders_fill_the_whole_protocol(cross_encoder, flag, cross_encoder_dir):
    for reranker in (cross_encoder, flag):
        assert isinstance(reranker, Reranker)
        assert reranker.batch_size == 32 and reranker.name.endswith(str(cross_encoder_dir))
    assert cross_encoder.name.startswith("cross-encoder:") and flag.name.startswith("flag:")


@pytest.mark.parametrize("route", ["cross_encoder", "flag"])
def test_scores_match_a_direct_forward_pass(route, request, passages, reference_scores):
    reranker = request.getfixturevalue(route)
    scores = reranker.score(QUESTION, passages)
    assert len(scores) == len(passages)
    assert all(isinstance(s, float) for s in scores)
    assert scores == pytest.approx(reference_scores, abs=1e-4)
    # The untrained head still separates texts: the comparison above is not between constants.
    assert max(reference_scores) - min(reference_scores) > 1e-2


@pytest.mark.slow  # 40 pairs one at a time, per loader: ~5 s idle, 15 s on a busy machine
@pytest.mark.parametrize("route", ["cross_encoder", "flag"])
def test_batch_size_does_not_change_scores_and_order_follows_input(route, request, cross_encoder_dir, snippets):
    loader = CrossEncoderReranker if route == "cross_encoder" else FlagEmbeddingReranker
    one = loader(cross_encoder_dir, batch_size=1).score(QUESTION, snippets)
    big = request.getfixturevalue(route)  # batch size 32: 40 texts make two padded batches
    assert big.batch_size == 32
    assert big.score(QUESTION, snippets) == pytest.approx(one, abs=1e-4)

    # Both libraries sort pairs by length internally; scores must come back in input order.
    order = list(range(len(snippets)))
    random.Random(7).shuffle(order)
    shuffled = big.score(QUESTION, [snippets[i] for i in order])
    assert shuffled == pytest.approx([one[i] for i in order], abs=1e-4)


def test_normalize_is_a_sigmoid_of_the_logits(cross_encoder_dir, passages, reference_scores):
    import math

    for loader in (CrossEncoderReranker, FlagEmbeddingReranker):
        scores = loader(cross_encoder_dir, normalize=True).score(QUESTION, passages[:5])
        assert scores == pytest.approx([1 / (1 + math.exp(-x)) for x in reference_scores[:5]], abs=1e-5)


def test_build_reranker_picks_the_loader_by_directory(cross_encoder_dir, tmp_path, reference_scores, passages):
    plain = build_reranker(RetrievalSettings(reranker_path=str(cross_encoder_dir), reranker_batch_size=8))
    assert isinstance(plain, CrossEncoderReranker)
    assert plain.name == f"cross-encoder:{cross_encoder_dir}"
    assert plain.batch_size == 8

    # Same weights under a bge-reranker name (as a Hugging Face cache snapshot would be named).
    bge = tmp_path / "models--BAAI--bge-reranker-v2-m3" / "snapshots" / "0123abc"
    bge.parent.mkdir(parents=True)
    bge.symlink_to(cross_encoder_dir, target_is_directory=True)
    flag = build_reranker(RetrievalSettings(reranker_path=str(bge)))
    assert isinstance(flag, FlagEmbeddingReranker)
    assert flag.name == f"flag:{bge}"
    assert flag.score(QUESTION, passages[:3]) == pytest.approx(reference_scores[:3], abs=1e-4)


def test_bge_detection_reads_the_config_name(tmp_path, cross_encoder_dir):
    renamed = tmp_path / "my-reranker"
    renamed.mkdir()
    config = json.loads((cross_encoder_dir / "config.json").read_text())
    (renamed / "config.json").write_text(json.dumps({**config, "_name_or_path": "BAAI/bge-reranker-large"}))
    assert is_bge_reranker(renamed)
    assert not is_bge_reranker(cross_encoder_dir)


def test_empty_input_and_bad_arguments(cross_encoder):
    assert cross_encoder.score(QUESTION, []) == []
    with pytest.raises(TypeError, match="not one string"):
        cross_encoder.score(QUESTION, "a single passage")


def test_missing_directory_is_a_clear_error(tmp_path):
    missing = tmp_path / "no-such-reranker"
    for make in (
        lambda: build_reranker(RetrievalSettings(reranker_path=str(missing))),
        lambda: CrossEncoderReranker(missing),
        lambda: FlagEmbeddingReranker(missing),
    ):
        with pytest.raises(RerankerError, match="never downloaded") as err:
            make()
        assert str(missing) in str(err.value)
        assert isinstance(err.value, ModelError)  # one error root: callers catch ModelError

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RerankerError, match="no config.json"):
        build_reranker(RetrievalSettings(reranker_path=str(empty)))


def test_llm_bge_reranker_is_refused_by_name(tmp_path):
    gemma = tmp_path / "bge-reranker-v2-gemma"
    gemma.mkdir()
    (gemma / "config.json").write_text(json.dumps({"architectures": ["GemmaForCausalLM"]}))
    with pytest.raises(RerankerError, match="LLM-based bge rerankers"):
        build_reranker(RetrievalSettings(reranker_path=str(gemma)))


def test_flag_route_draws_no_progress_bars(flag, snippets, capfd):
    capfd.readouterr()
    flag.score(QUESTION, snippets)  # more pairs than batch_size: FlagEmbedding would draw bars
    assert "it/s" not in capfd.readouterr().err


@pytest.mark.parametrize("route", ["cross_encoder", "flag"])
def test_concurrent_callers_get_their_own_scores(route, request, snippets):
    reranker = request.getfixturevalue(route)
    questions = [QUESTION, "Who directed the film?", "Where is the river?", "When was it founded?"]
    expected = {q: reranker.score(q, snippets[:10]) for q in questions}
    results: dict[str, list[float]] = {}
    errors: list[BaseException] = []

    def work(q: str) -> None:
        try:
            results[q] = reranker.score(q, snippets[:10])
        except BaseException as e:  # reported below: a thread's exception is otherwise lost
            errors.append(e)

    threads = [threading.Thread(target=work, args=(q,)) for q in questions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for q in questions:
        assert results[q] == pytest.approx(expected[q], abs=1e-5)


def test_importing_the_module_loads_no_model_library():
    code = (
        "import sys, kgrag.models.reranker; "
        "print([m for m in ('FlagEmbedding', 'sentence_transformers', 'torch') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
