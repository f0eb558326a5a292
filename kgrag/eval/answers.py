"""Answer-level metrics: does the answer hold a gold answer, are its citations sound.

Answer matching follows the SQuAD/HotpotQA normalisation (case fold, punctuation and English
articles removed, whitespace collapsed) plus NFKC so full-width and half-width forms meet.
Chinese has no spaces between words, so a gold answer written in CJK is matched with all
whitespace removed on both sides; a Latin one must match whole words ("1955" is not found in
"19550"), where the edge between a CJK character and a digit or letter is a word edge ("189" is
found in "新增确诊病例189例").

Citation checks mirror what the generator's own checker does, seen from outside: a citation is
*precise* when it names a chunk the retrieval returned and that chunk's text (what the reader
was given: its parent when one was attached) supports a sentence that cites it. A sentence
citing several sources is supported jointly; each of its citations then counts when it adds a
term of the sentence the others lack (the ALCE idea: removing a useful citation loses support).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kgrag.generate.citations import answer_sentences
from kgrag.generate.tuning import CITATIONS
from kgrag.generate.types import Answer
from kgrag.retrieve.types import Hit
from kgrag.text.normalize import fold
from kgrag.text.scripts import CHAR_BREAKABLE, has_han
from kgrag.text.sentences import plain, terms

_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_UNSPACED_EDGE = re.compile(rf"(?<=[{CHAR_BREAKABLE}])(?=[^\s{CHAR_BREAKABLE}])|(?<=[^\s{CHAR_BREAKABLE}])(?=[{CHAR_BREAKABLE}])")


def normalize_answer(text: str) -> str:
    """NFKC, case fold, punctuation and symbols to spaces, English articles dropped, spaces
    collapsed."""
    s = fold(text)
    s = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in s)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _forms(prediction: str, gold: str) -> tuple[str, str] | None:
    p, g = normalize_answer(prediction), normalize_answer(gold)
    if not g:
        return _raw_forms(prediction, gold)
    if has_han(g):
        return p.replace(" ", ""), g.replace(" ", "")
    # Padded: containment means whole words. Chinese and Japanese write no space between a word
    # and a number or a Latin name ("新增确诊病例189例", "共有32支队伍"): that edge is a word edge too.
    return f" {_UNSPACED_EDGE.sub(' ', p)} ", f" {_UNSPACED_EDGE.sub(' ', g)} "


def _raw_forms(prediction: str, gold: str) -> tuple[str, str] | None:
    """A gold answer normalization would empty (the Slack prefix "a_", "#"): compared as written,
    case folded, a whole token (any character the gold does not hold is a word edge: "`a_`" holds
    "a_", "a `b_`" does not). None for a blank gold or one of only an article."""
    g = " ".join(fold(gold).split())
    if not any(unicodedata.category(ch)[0] in "PS" for ch in g):
        return None  # blank, or only an article ("The"): matches nothing
    p = fold(prediction)
    p = "".join(ch if ch.isalnum() or ch in g else " " for ch in p)
    return f" {' '.join(p.split())} ", f" {g} "


def answer_exact(prediction: str, golds: Iterable[str]) -> bool:
    return any(f is not None and f[0] == f[1] for f in (_forms(prediction, g) for g in golds))


def answer_contains(prediction: str, golds: Iterable[str]) -> bool:
    return any(f is not None and f[1] in f[0] for f in (_forms(prediction, g) for g in golds))


def answer_leads(prediction: str, golds: Iterable[str]) -> bool:
    """Whether the answer's first sentence holds a gold answer: what a reader takes as the
    answer. Quoting both options of "Which came first, A or B?" contains the gold, and so does
    an answer leading with the wrong one; this does not."""
    sentences = answer_sentences(prediction)
    return bool(sentences) and answer_contains(sentences[0].text, golds)


@dataclass
class CitationCheck:
    n: int
    chunk_id: str
    doc_id: str
    retrieved: bool  # the chunk is one of the hits given to the generator
    supported: bool  # its text supports a sentence citing it
    gold: bool  # its passage is a gold passage of the query

    @property
    def precise(self) -> bool:
        return self.retrieved and self.supported


def check_citations(answer: Answer, hits: Sequence[Hit], gold_ids: Iterable[str]) -> list[CitationCheck]:
    by_chunk = {h.chunk.id: h for h in hits}
    gold = set(gold_ids)
    sentences = answer_sentences(answer.text)
    source_terms: dict[int, set[str]] = {}
    for c in answer.citations:
        hit = by_chunk.get(c.chunk_id)
        if hit is not None:
            source_terms[c.n] = terms(f"{hit.context.title}\n{hit.context.text}")
    out = []
    for c in answer.citations:
        retrieved = c.n in source_terms
        citing = [s for s in sentences if c.n in s.numbers]
        supported = retrieved and any(_supports(s.text, s.numbers, c.n, source_terms) for s in citing)
        out.append(CitationCheck(c.n, c.chunk_id, c.doc_id, retrieved, supported, c.doc_id in gold))
    return out


def _supports(sentence: str, numbers: list[int], n: int, source_terms: dict[int, set[str]]) -> bool:
    words = terms(plain(sentence))
    own = source_terms.get(n, set())
    if len(words) < CITATIONS.min_terms:  # "Yes." — too short to check, as in the generator's checker
        return True
    if len(words & own) / len(words) >= CITATIONS.min_support:
        return True
    others = set().union(*(source_terms.get(k, set()) for k in set(numbers) - {n}))
    joint = own | others
    return len(words & joint) / len(words) >= CITATIONS.min_support and bool((words & own) - others)
