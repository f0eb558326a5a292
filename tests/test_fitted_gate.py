"""The fitted part of the abstention gate (kgrag/retrieve/answerable.py, issue 43): a logistic
model over named features of the question and its first hits, asked only after every rule let
the question pass. Its weights ship in ``answerable_model.json`` (``benchmarks/gate_fit.py``)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from kgrag.config import RetrievalSettings
from kgrag.retrieve import answerable
from kgrag.retrieve.abstain import assess, gate_settings
from kgrag.retrieve.types import Hit, PathRank
from kgrag.types import Chunk

NEAR_MISS = "What is the maximum number of API keys per user?"  # the guide: rotated keys stay valid 24 hours
ANSWERED = "Where was Maret Kuusik born?"


def test_a_near_miss_the_rules_pass_is_declined_by_the_fitted_model(demo_kb):
    result = demo_kb.retriever.retrieve(NEAR_MISS)
    gate = result.gate
    assert gate["abstain"] and gate["reason"].startswith("the fitted model"), gate
    assert gate["answerable"] < demo_kb.settings.retrieval.abstain_min_answerable
    answer = demo_kb.generator.answer_to(NEAR_MISS, result)
    assert answer.abstained and not answer.citations, answer.text
    # without the model the rules let it through: it is the model that declines
    rules_only = replace(gate_settings(demo_kb.settings.retrieval), min_answerable=0.0)
    top = result.hits[:demo_kb.settings.retrieval.top_k]
    meaning = demo_kb.retriever.meaning_of(result.query.question, top)
    assert not assess(result.query.question, top, result.query.linked, rules_only, ties=result.name_ties,
                      meaning=meaning).abstain


def test_a_question_the_knowledge_base_answers_passes_the_model(demo_kb):
    result = demo_kb.retriever.retrieve(ANSWERED)
    assert not result.below_threshold, result.gate
    assert result.gate["answerable"] >= 0.3, result.gate
    answer = demo_kb.generator.answer_to(ANSWERED, result)
    assert not answer.abstained and "Tartu" in answer.text, answer.text


def _hit(cid: str, title: str, text: str, ranks: dict[str, int], dense: float) -> Hit:
    paths = {name: PathRank(rank, 1.0 / rank) for name, rank in ranks.items()}
    if "dense" in paths:
        paths["dense"] = PathRank(ranks["dense"], dense, calibrated=dense)
    return Hit(Chunk(id=cid, doc_id=cid, text=text, title=title, start=0, end=len(text)), 1.0 / (60 + min(ranks.values())),
               paths=paths, fused_score=1.0 / (60 + min(ranks.values())))


def _signals(hits):
    gate = replace(gate_settings(RetrievalSettings()), min_answerable=0.0)
    return assess("When was the Glass Harbor lighthouse built?", hits, [], gate).signals


def test_the_features_read_no_rank_and_no_fused_score():
    """With the gold taken out of a ranked list (``--negatives``) the first hit left sits lower
    in its paths than it would in a knowledge base without the gold: a feature reading ranks
    would learn the simulation. The same hits ranked otherwise give the same features."""
    texts = [("a", "Glass Harbor", "The Glass Harbor lighthouse was built in 1888 on Vormsi."),
             ("b", "Vormsi", "Vormsi is an island of Estonia with a lighthouse.")]
    first = _signals([_hit(c, t, x, {"bm25": 1, "dense": 1}, 0.6) for c, t, x in texts])
    lower = _signals([_hit(c, t, x, {"bm25": 4 + i, "dense": 7 + i}, 0.6) for i, (c, t, x) in enumerate(texts)])
    assert first is not None and first == lower
    assert first["sent_cov"] == 1.0 and first["about1"] == 1.0


def test_the_shipped_model_reads_the_named_features():
    data = json.loads(answerable.MODEL_FILE.read_text(encoding="utf-8"))
    assert tuple(data["features"]) == answerable.FEATURES
    assert len(data["weights"]) == len(data["means"]) == len(data["scales"]) == len(answerable.FEATURES)
    with pytest.raises(ValueError, match="unknown features"):
        answerable.AnswerableModel.from_json({**data, "features": ["rank_of_first_hit", *data["features"][1:]]})


def test_the_model_is_not_asked_about_chinese_questions():
    assert not answerable.applies("最近公共祖先是什么？") and answerable.applies("What is the LCA?")


def test_the_fit_recovers_a_known_logistic_model():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("gate_fit", Path(__file__).parents[1] / "benchmarks" / "gate_fit.py")
    gate_fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gate_fit)
    fit_logistic = gate_fit.fit_logistic
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, 2))
    y = (rng.random(4000) < 1 / (1 + np.exp(-(1.5 * x[:, 0] - 2.0 * x[:, 1] + 0.5)))).astype(float)
    coef, intercept = fit_logistic(x, y, np.ones(len(y)), l2=1e6)
    assert np.allclose(coef, [1.5, -2.0], atol=0.2) and abs(intercept - 0.5) < 0.15
