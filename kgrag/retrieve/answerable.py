"""The fitted part of the abstention gate: how likely the top hits answer *this* question.

A logistic model over named features of the question and its first hits (``features``), its
weights in ``answerable_model.json`` beside this module, written by
``benchmarks/gate_fit.py`` (which also prints the curve that chose
``retrieval.abstain_min_answerable``; docs/decisions.md, "The fitted gate"). The gate
(``kgrag.retrieve.abstain``) asks it only after every rule has let the question pass, and only for
a question in Latin script whose best hit is in its own script: the features read words, and
Chinese questions and answers across scripts have rules of their own.

Every feature reads what a knowledge base without the answer would show too: words, the
calibrated dense cosine, which paths found a hit. None reads a path's rank or a fused score:
with the gold passages taken out of a ranked list (``kgrag eval --negatives``) the first hit
left sits second or lower in its paths, which no knowledge base that never held the gold would
show, and a model reading ranks learns the simulation (decisions.md has the run).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kgrag.retrieve.tuning import RANKING
from kgrag.retrieve.types import Hit
from kgrag.retrieve.word_forms import HitText, TextWords, content_words, word_coverage
from kgrag.text.asks import asks_value
from kgrag.text.scripts import HAN_RUN, has_han, is_mainly_non_latin
from kgrag.text.sentences import split_sentences

MODEL_FILE = Path(__file__).with_name("answerable_model.json")
# Sentences of the first hits read for the sentence features (a long page's tail adds nothing).
MAX_SENTENCES = 60

# Every feature reads the first hits as the answerer does, the best of them, not the first alone:
# the answer is often in the second or third hit (a wrong first hit, the right page after it).
FEATURES: tuple[str, ...] = (
    "coverage",  # share of the question's content words in the first hits (the gate's coverage)
    "dense",  # best calibrated dense cosine among the first hits (0 without one)
    "nwords",  # the question's content words
    "nnames",  # the question's names
    "about",  # a first hit's title or heading level is among the question's words
    "relation",  # share of the question's words outside its names found in the first hits
    "paths_best",  # the largest share of the paths that ran which found one of the first hits
    "cov_best",  # the best coverage of one hit alone
    "sent_cov",  # best share of the question's content words held by one sentence
    "sent_rel",  # ... of its words outside its names
    "asks_value",  # the question asks for a value (how many, which year, …)
    "title_rel",  # best share of the words outside the names in one hit's title and headings
    "title_cov",  # ... of all its content words
)


@dataclass(frozen=True)
class AnswerableModel:
    """Logistic regression over standardised ``FEATURES``."""

    features: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    weights: tuple[float, ...]
    intercept: float

    def probability(self, values: dict[str, float]) -> float:
        z = self.intercept + sum(w * (values[f] - m) / s for f, m, s, w in
                                 zip(self.features, self.means, self.scales, self.weights, strict=True))
        return 1.0 / (1.0 + math.exp(-z))

    @classmethod
    def from_json(cls, data: dict) -> AnswerableModel:
        names = tuple(data["features"])
        unknown = set(names) - set(FEATURES)
        if unknown:
            raise ValueError(f"answerable model names unknown features: {sorted(unknown)}")
        return cls(names, tuple(data["means"]), tuple(data["scales"]), tuple(data["weights"]), float(data["intercept"]))


@cache
def shipped_model() -> AnswerableModel:
    return AnswerableModel.from_json(json.loads(MODEL_FILE.read_text(encoding="utf-8")))


# A run of this many Han characters is prose in the other script (a name in parentheses,
# "李白", is shorter): the words the question seeks may be written there, unseen by the features.
OTHER_SCRIPT_RUN = 8


def applies(question: str, top: Sequence[Hit]) -> bool:
    """The model judges what it was fitted on: a question written in Latin script whose first
    hits (those the coverage reads) are written in it too. A mixed passage (an English line in a
    Chinese guide) may answer in the script the word features cannot read."""
    if is_mainly_non_latin(question) or has_han(question):
        return False
    return not any(len(run.group()) >= OTHER_SCRIPT_RUN for h in top[:RANKING.coverage_depth]
                   for run in HAN_RUN.finditer(h.context.text))


def features(question: str, names: Sequence[str], top: Sequence[Hit], read: Sequence[HitText], *,
             coverage: float, best_dense: float | None, about: Sequence[bool],
             relation_words: set[str]) -> dict[str, float]:
    """The named features of ``question`` over its first hits (``top``, best first, not
    empty, and ``read``, the same hits as words). ``names``, ``coverage``, ``best_dense``,
    ``about`` (per hit) and ``relation_words`` are the gate's own readings, passed in so they
    are computed once."""
    words = content_words(question)
    found = {w for w in relation_words if any(r.has(w) for r in read[:RANKING.coverage_depth])}
    sentences = [TextWords(s.text) for h in top for s in split_sentences(h.context.text)
                 if not s.heading and len(s.text) > 3][:MAX_SENTENCES]
    sent_cov = max((sum(s.has(w) for w in words) / len(words) for s in sentences), default=0.0) if words else 0.0
    sent_rel = (max((sum(s.has(w) for w in relation_words) / len(relation_words) for s in sentences), default=0.0)
                if relation_words else 1.0)
    first = top[:RANKING.coverage_depth]
    heads = [TextWords(f"{h.chunk.title} {h.chunk.section_path or ''}") for h in first]
    ran = {name for h in top for name in h.paths}
    return {
        "coverage": coverage,
        "dense": best_dense or 0.0,
        "nwords": float(len(words)),
        "nnames": float(len(names)),
        "about": float(any(about)),
        "relation": len(found) / len(relation_words) if relation_words else 1.0,
        "paths_best": max(len(h.paths) for h in first) / max(1, len(ran)),
        "cov_best": max(word_coverage(question, [r]) for r in read[:RANKING.coverage_depth]),
        "sent_cov": sent_cov,
        "sent_rel": sent_rel,
        "asks_value": float(asks_value(question)),
        "title_rel": (max(sum(h.has(w) for w in relation_words) for h in heads) / len(relation_words)
                      if relation_words else 0.0),
        "title_cov": max(sum(h.has(w) for w in words) for h in heads) / len(words) if words else 0.0,
    }
