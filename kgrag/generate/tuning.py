"""Tuned numbers of answering: one frozen dataclass per concern, each number named and described
in one line. The runs that chose them are in docs/decisions.md ("Tuned numbers").

Code reads them through the module-level instances (``EXTRACTIVE.max_sentences``); a test or an
experiment swaps one with ``dataclasses.replace`` on the module that reads it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExtractiveTuning:
    """How the extractive answerer picks and orders sentences (``kgrag.generate.extractive``)."""

    max_sentences: int = 3  # sentences an answer quotes
    min_relative_score: float = 0.3  # a further sentence scores at least this share of the best one
    rank_discount: float = 0.15  # a sentence of source n scores score / (1 + rank_discount × (n - 1))
    long_sentence: int = 300  # characters; longer "sentences" (unpunctuated runs) are discounted
    ask_bonus: float = 1.5  # a sentence holding the asked kind of answer scores this many times more
    other_language: float = 0.6  # factor of a sentence in the other script than the question's
    name_only: float = 0.3  # factor of a sentence sharing only a name with the question
    context_share: float = 0.5  # a sentence holding the asked kind scores at least this share of its source's best
    setting_share: float = 0.5  # weight of a term only of the question's setting (``setting_terms``)
    hop_sentences: int = 2  # sentences of a hop's page quoted (relation and place hops)
    defining_sentences: int = 2  # sentences of a subject's own source that say what it is
    list_anchor_chars: int = 60  # characters of the anchor item's name quoted in a positional answer
    list_min_coverage: float = 0.5  # share of the question's weighted words a list item must hold
    max_heading_words: int = 8  # a longer heading is no name


@dataclass(frozen=True)
class CitationTuning:
    """How an LLM answer's citations are checked (``kgrag.generate.citations``, and eval)."""

    min_terms: int = 2  # sentences with fewer content terms ("Yes.", "是的。") are not checked
    min_support: float = 0.5  # share of a sentence's terms that its cited sources must contain


@dataclass(frozen=True)
class AcrossLanguagesTuning:
    """Quoting a sentence written in another script than the question (``best_sentences._by_meaning``)."""

    sources: int = 3  # the first sources whose other-script sentences are weighed by meaning
    rivals: int = 3  # best own-script sentences (by words) such a sentence must beat in meaning
    margin: float = 0.0  # ... by at least this much similarity
    rank_penalty: float = 0.01  # similarity taken off per rank of the source below the first
    second_within: float = 0.02  # a further other-script sentence is quoted this close to the best
    quoted: int = 3  # other-script sentences quoted at most
    # An own-script sentence holding this share of the question's words (and its entities' names) says
    # it in the question's words: no other-script sentence is weighed by meaning against it
    # (docs/decisions.md, "Mixed passages")
    words_say_it: float = 0.8
    words_say_it_terms: int = 3


EXTRACTIVE = ExtractiveTuning()
CITATIONS = CitationTuning()
ACROSS_LANGUAGES = AcrossLanguagesTuning()
