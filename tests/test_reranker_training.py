"""``kgrag reranker train`` (issue 46): a cross-encoder fine-tuned from the shipped MiniLM on
queries mined from the knowledge base itself, exported to ONNX, loaded by the served pipeline;
what it may rerank (English only), how it blends with fusion, and how a broken model falls back.

Real parts throughout: the shipped MiniLM fine-tuned with PyTorch (the test extras), the embedded
stores, HotpotQA passages. Training here is a few dozen steps (~30 s on 2 cores).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import hotpot_corpus, ingested_corpus

pytest.importorskip("torch", reason="training a reranker needs PyTorch (the test extras install it)")

# A small run: every mined source capped, a fifth of the queries held back to check the model on.
SMALL = {"max_queries": 120, "held_back": 40, "groups_per_step": 4, "negatives": 3, "epochs": 3}


@pytest.fixture(scope="module")
def kb(tmp_path_factory, embedder, recognizer):
    from kgrag.components import Components
    from kgrag.config import Settings

    root = tmp_path_factory.mktemp("rerank-kb")
    comps = Components(Settings(data_dir=root / "kb"), embedder=embedder, recognizer=recognizer)
    ingested_corpus(comps, hotpot_corpus(root, 80), 80)
    yield comps
    comps.close()


@pytest.fixture(scope="module")
def trained(kb, tmp_path_factory):
    """The reranker trained on the knowledge base, and the same job stopped before its first step
    (the MiniLM encoder with its new, untrained head): what training adds is the difference."""
    from kgrag.reranker.job import train_reranker, with_tuning

    tuning = with_tuning(**SMALL)
    folder = tmp_path_factory.mktemp("models")
    report = train_reranker(kb, tuning=tuning, target=folder / "trained")
    untrained = train_reranker(kb, tuning=tuning, target=folder / "untrained", budget_s=0)
    return report, untrained


def test_training_ranks_held_back_queries_better_than_the_untrained_head(trained):
    report, untrained = trained
    assert report.steps >= 60 and untrained.steps == 0 and untrained.stopped_early
    # The same held-back queries (each: its passage and three hard negatives from BM25 and dense).
    assert report.held_back["queries"] == untrained.held_back["queries"] >= 20
    assert report.held_back["reranker_first"] >= 50.0, report.held_back  # twice chance (1 in 4)
    assert report.held_back["reranker_first"] >= untrained.held_back["reranker_first"] + 20, (report, untrained)


def test_the_installed_model_says_what_it_is_and_reloads_with_the_scores_it_was_checked_with(trained):
    from kgrag.config import RetrievalSettings
    from kgrag.models.reranker import OnnxReranker, build_reranker, is_onnx_reranker

    report, _ = trained
    folder = Path(report.model_dir)
    assert is_onnx_reranker(folder)
    manifest = json.loads((folder / "reranker.json").read_text(encoding="utf-8"))
    assert manifest["language"] == "en" and manifest["steps"] == report.steps
    assert sum(manifest["examples"].values()) == sum(report.examples.values()) > 0
    assert not (folder / "model.float.onnx").exists()  # only the int8 graph is served
    question = "Which magazine was started first?"
    texts = ["Arthur's Magazine was an American literary periodical first published in 1844.",
             "First for Women is a woman's magazine published by Bauer Media Group in the USA.",
             "The Oberoi family is an Indian family famous for its involvement in hotels."]
    first = OnnxReranker(folder).score(question, texts)
    again = build_reranker(RetrievalSettings(reranker_path=str(folder)))
    assert isinstance(again, OnnxReranker) and not again.multilingual
    assert again.score(question, texts) == pytest.approx(first, abs=1e-6)


def test_export_matches_the_trained_torch_model(trained, tmp_path):
    """The ONNX graph written without torch scores as the trained transformers model does (the
    float graph exactly; the int8 one served keeps the order of clearly different scores)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from kgrag.models.reranker import OnnxReranker
    from kgrag.reranker.export import write_onnx

    folder = Path(trained[0].model_dir)
    float_dir = tmp_path / "float"
    float_dir.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "reranker.json"):
        (float_dir / name).write_bytes((folder / name).read_bytes())
    write_onnx(float_dir, float_dir / "model.onnx", quantize=False)
    question = "Where was the film director born?"
    texts = ["She was born in Tartu in 1974 and studied cinematography.", "The bridge opened in 1932.",
             "A river runs through the town."]
    model = AutoModelForSequenceClassification.from_pretrained(str(folder)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    with torch.no_grad():
        encoded = tokenizer([question] * 3, texts, truncation=True, max_length=128, padding=True, return_tensors="pt")
        expected = model(**encoded).logits.view(-1).tolist()
    assert OnnxReranker(float_dir).score(question, texts) == pytest.approx(expected, abs=1e-4)


def test_training_needs_english_chunks(components):
    from kgrag.reranker.job import RerankerTrainingError, train_reranker

    with pytest.raises(RerankerTrainingError, match="no English chunk"):
        train_reranker(components)


def _served(kb, tmp_path, model: Path, **retrieval):
    """Components over ``kb``'s knowledge base whose settings point at ``model`` (shared models)."""
    from kgrag.components import Components

    settings = kb.settings.model_copy(update={"retrieval": kb.settings.retrieval.model_copy(
        update={"reranker_path": str(model), **retrieval})})
    return Components(settings, embedder=kb.embedder, recognizer=kb.recognizer)


def test_a_corrupt_model_falls_back_to_fusion_and_says_so(kb, trained, tmp_path):
    """The server answers 200 with the fused order, and the trace names the file and the reason."""
    from kgrag.server.app import create_app

    broken = tmp_path / "broken"
    broken.mkdir()
    for path in Path(trained[0].model_dir).iterdir():
        (broken / path.name).write_bytes(path.read_bytes())
    (broken / "model.onnx").write_bytes(b"not a protobuf")
    comps = _served(kb, tmp_path, broken)
    try:
        question = "Which magazine was started first, Arthur's Magazine or First for Women?"
        result = comps.retriever.retrieve(question, rerank=True)
        plain = kb.retriever.retrieve(question, rerank=False)
        assert result.reranker is None and [h.chunk.id for h in result.hits] == [h.chunk.id for h in plain.hits]
        assert any("could not be loaded" in w and "broken" in w for w in result.warnings), result.warnings
        client = create_app(comps.settings, comps, warm=False).test_client()
        response = client.post("/v1/retrieve", json={"question": question, "rerank": True})
        assert response.status_code == 200, response.get_json()
        assert any("could not be loaded" in w for w in response.get_json()["trace"]["warnings"])
    finally:
        comps.close()


def test_an_english_reranker_leaves_chinese_questions_and_chunks_in_their_fused_places(trained):
    from kgrag.models.reranker import OnnxReranker
    from kgrag.retrieve.reranking import rerank
    from kgrag.retrieve.types import Hit
    from kgrag.types import Chunk

    model = OnnxReranker(trained[0].model_dir)

    def hits(texts):
        return [Hit(Chunk(id=f"c{i}", doc_id=f"d{i}", text=t), score=1.0 / (i + 1), fused_rank=i + 1)
                for i, t in enumerate(texts)]

    zh = "杭州是浙江省的省会。"
    ranked = rerank(model, "Which city is the capital of Zhejiang?",
                    hits(["The bridge opened in 1932.", zh, "Hangzhou is the capital of Zhejiang province."]))
    assert ranked.hits[1].chunk.text == zh and ranked.hits[1].rerank_score is None  # kept its place
    assert ranked.scored == 2 and "reads English only" in (ranked.note or "")
    assert ranked.hits[0].chunk.text.startswith("Hangzhou")  # the English ones reordered around it
    untouched = rerank(model, "浙江省的省会是哪里？", hits(["The bridge opened in 1932.", zh]))
    assert untouched.scored == 0 and [h.chunk.text for h in untouched.hits] == ["The bridge opened in 1932.", zh]


def test_blending_lets_fusion_hold_what_the_reranker_would_move_far():
    from kgrag.retrieve.reranking import blended
    from kgrag.retrieve.types import Hit
    from kgrag.types import Chunk

    by_fusion = [Hit(Chunk(id=f"c{i}", doc_id=f"d{i}", text=str(i)), score=1.0, fused_rank=i + 1) for i in range(10)]
    by_reranker = by_fusion[::-1]  # the reranker reverses fusion's order
    assert [h.chunk.id for h in blended(by_reranker, 1.0)] == [h.chunk.id for h in by_reranker]
    assert [h.chunk.id for h in blended(by_reranker, 0.0)] == [h.chunk.id for h in by_fusion]
    # Mostly fusion: the reranker's first (fusion's last) does not come first.
    assert blended(by_reranker, 0.3)[0].chunk.id == "c0"


def test_a_server_trains_in_the_background_and_reports_progress(kb, tmp_path):
    """POST /v1/reranker/train (admin) answers 202 at once; the job's stages advance while the
    server keeps answering; a second start meanwhile is a 409; the model ends up installed."""
    import time

    from kgrag.reranker.status import trained_model_dir
    from kgrag.server.app import create_app

    key = "k" * 32
    settings = kb.settings.model_copy(update={"server": kb.settings.server.model_copy(update={"api_key": key})})
    client = create_app(settings, kb, warm=False).test_client()
    assert client.post("/v1/reranker/train", json={}).status_code == 401
    bad = client.post("/v1/reranker/train", json={"queries": 3}, headers={"X-API-Key": key})
    assert bad.status_code == 400 and "queries" in bad.get_data(as_text=True)
    started = client.post("/v1/reranker/train", json={"queries": 24}, headers={"X-API-Key": key, "X-Kgrag-Job": "rr"})
    assert started.status_code == 202 and started.get_json() == {"job": "rr", "state": "running"}
    again = client.post("/v1/reranker/train", json={"queries": 24}, headers={"X-API-Key": key})
    assert again.status_code == 409
    answered = client.post("/v1/retrieve", json={"question": "Which magazine was started first?"})
    assert answered.status_code == 200
    stages = []
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        job = client.get("/v1/jobs/rr", headers={"X-API-Key": key}).get_json()
        stages.append(job["stage"])
        if job["state"] != "running":
            break
        time.sleep(0.5)
    assert job["state"] == "done", job
    assert "installed in" in job["message"] and (trained_model_dir(kb.settings.data_dir) / "model.onnx").is_file()
    assert "training" in stages and stages[-1] == "done", stages
