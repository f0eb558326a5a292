"""Tuned numbers of the extractive answerers, one frozen dataclass per concern; the runs that
chose them are in docs/decisions.md."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AcrossLanguages:
    """Quoting a sentence written in another script than the question (``best_sentences``)."""

    # Sources read for such sentences: the first few (the meaning of each sentence is computed
    # by the multilingual model at answer time).
    sources: int = 3
    # Sentences in the question's own script, best by words first, that such a sentence must
    # beat in meaning to be quoted instead of them.
    rivals: int = 3
    # ... by at least this much similarity.
    margin: float = 0.0
    # Similarity taken off per rank of the source below the first.
    rank_penalty: float = 0.01
    # A second sentence of the other script is quoted when it is this close to the best one.
    second_within: float = 0.02


ACROSS_LANGUAGES = AcrossLanguages()
