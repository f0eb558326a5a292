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

# A small English handbook beside the demo's English pages: the model reads a question written in
# Latin script over hits written in it (the demo's guide mixes Chinese and English).
HANDBOOK = {
    "travel.md": "# Travel and Expense Policy\n\n## Meals while traveling\n\nTeam members may expense meals up to "
                 "$100 USD per day while traveling on company business. Tips for meals may be up to 20% of the bill."
                 "\n\n## Hotels\n\nBook hotels through the company travel tool. A standard room in a business hotel "
                 "is the norm, close to the office you visit.\n\n## Missing receipts\n\nIf a receipt is missing, "
                 "complete the Missing Receipt Affidavit and attach it to the expense report.\n",
    "slack.md": "# Slack channels\n\n## Channel prefixes\n\nProject channels start with proj_ and are archived when "
                "the project ends. Feature channels start with f_ and gather everyone interested in one feature. "
                "External channels shared with vendors or partners start with ext-.\n\n## Key channels\n\nAsk for "
                "help with Git in the terminal in #git-help. Thank colleagues publicly in #thanks.\n",
    "org.md": "# Organizational structure\n\n## Layers\n\nThe smallest organizational unit is a team: a manager and "
              "their direct reports. Teams form departments, and departments form divisions.\n\n## E-Group\n\nThe "
              "E-Group is the executive team that reports to the CEO. VPs who report directly to a member of the "
              "E-Group form the VP-Directs Group.\n",
    "security.md": "# Security practices\n\n## Laptops\n\nEvery laptop must use full-disk encryption and lock the "
                   "screen after 15 minutes. Lost laptops are reported to the security team within one hour.\n\n"
                   "## Passwords\n\nUse the company password manager for every account. Passwords are at least 12 "
                   "characters long.\n",
}
# The policy speaks of meals, hotels and receipts while traveling, never of gifts to a host.
NEAR_MISS = "What is the maximum value of a host gift a team member can expense when staying with family?"


@pytest.fixture(scope="module")
def handbook_kb(tmp_path_factory, embedder, recognizer):
    import shutil

    from kgrag.components import Components
    from kgrag.config import Settings
    from tests.conftest import REPO

    root = tmp_path_factory.mktemp("handbook-kb")
    corpus = root / "corpus"
    corpus.mkdir()
    for name, text in HANDBOOK.items():
        (corpus / name).write_text(text, encoding="utf-8")
    for name in ("wikipedia_en.jsonl", "lowest_common_ancestor.md"):
        shutil.copy(REPO / "kgrag" / "demo" / "corpus" / name, corpus)
    comps = Components(Settings(data_dir=root / "kb"), embedder=embedder, recognizer=recognizer)
    assert not comps.ingest_job().run([corpus]).failed
    yield comps
    comps.close()


def test_a_near_miss_the_rules_pass_is_declined_by_the_fitted_model(handbook_kb):
    result = handbook_kb.retriever.retrieve(NEAR_MISS)
    gate = result.gate
    assert gate["abstain"] and gate["reason"].startswith("the fitted model"), gate
    assert gate["answerable"] < handbook_kb.settings.retrieval.abstain_min_answerable
    answer = handbook_kb.generator.answer_to(NEAR_MISS, result)
    assert answer.abstained and not answer.citations, answer.text
    # without the model the rules let it through: it is the model that declines
    rules_only = replace(gate_settings(handbook_kb.settings.retrieval), min_answerable=0.0)
    top = result.hits[:handbook_kb.settings.retrieval.top_k]
    assert not assess(result.query.question, top, result.query.linked, rules_only, ties=result.name_ties).abstain


@pytest.mark.parametrize(("question", "quoted"), [
    ("Which password manager does the company use?", "company password manager"),
    ("How long must passwords be?", "12 characters"),
    ("Who directed Black Book?", "Verhoeven"),
])
def test_questions_the_knowledge_base_answers_pass_the_model(handbook_kb, question, quoted):
    result = handbook_kb.retriever.retrieve(question)
    assert not result.below_threshold and result.gate["answerable"] >= 0.3, result.gate
    answer = handbook_kb.generator.answer_to(question, result)
    assert not answer.abstained and quoted in answer.text, answer.text


def test_a_mixed_passage_is_left_to_the_rules(demo_kb):
    """The demo's guide answers in Chinese beside English lines; the word features cannot read
    it, so the model is not asked (it had declined this answered question)."""
    question = "What is the maximum length of a custom role name?"
    result = demo_kb.retriever.retrieve(question)
    assert not result.below_threshold and result.gate["answerable"] is None, result.gate


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
    assert first["sent_cov"] == 1.0 and first["about"] == 1.0


def test_the_shipped_model_reads_the_named_features():
    data = json.loads(answerable.MODEL_FILE.read_text(encoding="utf-8"))
    assert tuple(data["features"]) == answerable.FEATURES
    assert len(data["weights"]) == len(data["means"]) == len(data["scales"]) == len(answerable.FEATURES)
    with pytest.raises(ValueError, match="unknown features"):
        answerable.AnswerableModel.from_json({**data, "features": ["rank_of_first_hit", *data["features"][1:]]})


def test_the_model_reads_only_english_questions_over_english_hits():
    english = [_hit("a", "LCA", "The lowest common ancestor (李白 aside) of two nodes is the deepest shared one.",
                    {"bm25": 1}, 0.5)]
    mixed = [_hit("g", "权限指南", "自定义角色的名称必须唯一，长度不超过 64 个字符。 Roles are listed below.", {"bm25": 1}, 0.5)]
    assert answerable.applies("What is the LCA?", english)
    assert not answerable.applies("最近公共祖先是什么？", english)
    assert not answerable.applies("What is the maximum length of a custom role name?", mixed)


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
