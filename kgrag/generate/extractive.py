"""An answer without an LLM: the source sentences that best cover the question, each cited.

Query terms are weighted by how rare they are among the sources (a term every source has
says little about which sentence answers). Sentences are picked greedily: each next one must
cover a query term the picked ones do not, and score at least a fraction of the best one, so
an answer split over two sentences ("X is ... . It was founded in 1755.") is found while
loosely related sentences stay out. Sentences from lower-ranked hits are discounted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from kgrag.generate.citations import source_sentences
from kgrag.generate.sentences import Sentence, plain, terms
from kgrag.generate.types import Source
from kgrag.lexicon.scripts import is_no_space_char

MAX_SENTENCES = 3
MIN_RELATIVE_SCORE = 0.3  # a further sentence scores at least this share of the best one
RANK_DISCOUNT = 0.15  # score / (1 + RANK_DISCOUNT * (n - 1)) for source n
LONG_SENTENCE = 300  # characters; longer "sentences" (unpunctuated runs) are discounted

_FINAL_PUNCTUATION = re.compile(r"[.!?;。！？；]+$")


@dataclass(eq=False)  # picks are compared by identity
class Pick:
    source: Source
    sentence: Sentence
    body: str  # the sentence without a Markdown list/heading prefix
    terms: set[str]
    score: float = 0.0


def choose(question: str, sources: Sequence[Source]) -> list[Pick]:
    """The 1..MAX_SENTENCES sentences of the answer, in source and reading order."""
    candidates = [
        Pick(source, sentence, plain(sentence.text), terms(plain(sentence.text)))
        for source in sources
        for sentence in source_sentences(source)
    ]
    candidates = [c for c in candidates if c.terms]
    if not candidates:
        return []
    weights = _query_weights(terms(question), candidates, len(sources))
    total = sum(weights.values())
    for c in candidates:
        covered = sum(weights.get(t, 0.0) for t in c.terms)
        length_discount = 1 + max(0, len(c.body) - LONG_SENTENCE) / (2 * LONG_SENTENCE)
        rank_discount = 1 + RANK_DISCOUNT * (c.source.n - 1)
        c.score = covered / total / length_discount / rank_discount if total else 0.0
    best = max(candidates, key=lambda c: c.score)
    if best.score == 0.0:
        return [_lead_sentence(candidates)]
    picked: list[Pick] = []
    covered_terms: set[str] = set()
    while len(picked) < MAX_SENTENCES:
        rest = [
            (_gain(c, weights, covered_terms), c)
            for c in candidates
            if c not in picked and c.score >= MIN_RELATIVE_SCORE * best.score
        ]
        rest = [(g, c) for g, c in rest if g > 0]
        if not rest:
            break
        # Most new coverage first; among equals the better-scored (higher-ranked) sentence.
        _, nxt = max(rest, key=lambda gc: (gc[0] / (1 + RANK_DISCOUNT * (gc[1].source.n - 1)), gc[1].score))
        picked.append(nxt)
        covered_terms |= nxt.terms
    return sorted(picked, key=lambda c: (c.source.n, c.sentence.start))


def _gain(c: Pick, weights: dict[str, float], covered: set[str]) -> float:
    return sum(weights.get(t, 0.0) for t in c.terms - covered)


def _query_weights(query: set[str], candidates: list[Pick], n_sources: int) -> dict[str, float]:
    """Inverse source frequency of each query term found in some source."""
    frequency: dict[str, set[int]] = {}
    for c in candidates:
        for t in c.terms & query:
            frequency.setdefault(t, set()).add(c.source.n)
    return {t: math.log(1 + (n_sources + 1) / (len(found) + 0.5)) for t, found in frequency.items()}


def _lead_sentence(candidates: list[Pick]) -> Pick:
    """No sentence shares a term with the question: the first sentence of the matched chunk of
    the top hit (retrieval ranked it first for a reason the words do not show, e.g. a graph path)."""
    top = [c for c in candidates if c.source.n == candidates[0].source.n]
    chunk = top[0].source.hits[0].chunk
    for c in top:
        if chunk.start <= c.source.offset + c.sentence.start < chunk.end:
            return c
    return top[0]


def cite(body: str, n: int) -> str:
    """The sentence with ``[n]`` before its final punctuation: "... tree [1]." / "……祖先[1]。"."""
    marker = f"[{n}]"
    m = _FINAL_PUNCTUATION.search(body)
    head, tail = (body[: m.start()], m.group()) if m else (body, "")
    head = head.rstrip()
    space = "" if head and is_no_space_char(head[-1]) else " "
    return f"{head}{space}{marker}{tail}"


def compose(picks: Sequence[Pick]) -> str:
    parts: list[str] = []
    for p in picks:
        if parts:
            previous = parts[-1][-1]
            if not is_no_space_char(previous):
                parts.append(" ")
        parts.append(cite(p.body, p.source.n))
    return "".join(parts)
