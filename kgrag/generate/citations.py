"""Citation markers: parse, normalise, drop the ones naming no given source, flag weak sentences.

Markers understood: ``[1]``, ``[1, 2]``, ``[1][3]``, ``[1-3]``, ``[Source 2]``, full-width
``【1】`` / ``【1，2】``. Every marker left in the checked text is written ``[n]``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from kgrag.generate.tuning import CITATIONS
from kgrag.generate.types import Citation, Source
from kgrag.text.scripts import is_mainly_non_latin
from kgrag.text.sentences import (
    Quotable,
    Sentence,
    faq_paired,
    is_heading,
    plain,
    shorten,
    split_sentences,
    terms,
)
from kgrag.types import Chunk

_NUMBER = r"\d{1,4}"
_SEPARATOR = r"\s*(?:[,，、;；]|[-–—~])\s*"
_LABEL = r"(?:(?:sources?|refs?|来源|资料)\s*)?"
MARKER = re.compile(rf"[\[【]\s*{_LABEL}({_NUMBER}(?:{_SEPARATOR}{_LABEL}{_NUMBER})*)\s*[\]】]", re.IGNORECASE)
_RANGE_PART = re.compile(rf"({_NUMBER})(?:\s*[-–—~]\s*{_LABEL}({_NUMBER}))?", re.IGNORECASE)
_NORMALISED = re.compile(r"\[(\d+)\]")
_LEADING_MARKERS = re.compile(r"^(?:\[\d+\]\s*)+")
_MAX_RANGE = 20  # "[1-3]" expands; "[1-999]" is not a citation anyone means

# Phrases by which a model says it cannot answer from the sources.
_NOT_IN_KB = re.compile(
    r"\b(?:knowledge base|sources?|context|documents?|texts?|information provided|provided (?:text|information))\b"
    r"[^.!?]{0,60}?\b(?:does not|doesn't|do not|don't|did not|didn't|cannot|can't)\b[^.!?]{0,30}?"
    r"\b(?:say|contain|mention|provide|include|answer|specify|state|tell|cover)"
    r"|\b(?:cannot|can't|can not|unable to|not able to)\b[^.!?]{0,30}?\b(?:answer|find|determine|tell)\b"
    r"|\bno (?:relevant |such |specific )?information\b"
    r"|\bnot (?:enough|sufficient) information\b"
    r"|\bI (?:do not|don't) know\b"
    r"|没有(?:相关|提到|提及|包含|说明|给出)|未(?:提及|提到|包含|说明|给出)|无法(?:回答|确定|找到|得知)|不知道"
    r"|没有[^。！？]{0,8}信息",
    re.IGNORECASE,
)



def parse_numbers(inner: str) -> list[int]:
    """The source numbers inside one marker (its text between the brackets)."""
    numbers: list[int] = []
    for m in _RANGE_PART.finditer(inner):
        first = int(m.group(1))
        last = int(m.group(2)) if m.group(2) else first
        if first < last <= first + _MAX_RANGE:
            numbers.extend(range(first, last + 1))
        else:
            numbers.extend([first] if last == first else [first, last])
    return list(dict.fromkeys(numbers))


def says_not_in_kb(text: str) -> bool:
    return _NOT_IN_KB.search(text) is not None


def normalise_markers(text: str, n_sources: int) -> tuple[str, list[str]]:
    """Rewrite markers as ``[n]``; drop numbers outside 1..n_sources and report them as "[k]"."""
    out: list[str] = []
    invalid: list[str] = []
    position = 0
    for m in MARKER.finditer(text):
        numbers = parse_numbers(m.group(1))
        valid = [k for k in numbers if 1 <= k <= n_sources]
        invalid.extend(f"[{k}]" for k in numbers if not 1 <= k <= n_sources)
        before = text[position : m.start()]
        replacement = "".join(f"[{k}]" for k in valid)
        if not replacement:
            following = text[m.end() : m.end() + 1]
            if not following or following.isspace() or following in ".,;:!?。，；：！？、)）":
                before = before.rstrip(" \t")  # "says so [9]." -> "says so."
        out.append(before)
        out.append(replacement)
        position = m.end()
    out.append(text[position:])
    cleaned = re.sub(r"[ \t]{2,}", " ", "".join(out)) if invalid else "".join(out)
    return cleaned.strip(), list(dict.fromkeys(invalid))


@dataclass
class CitedSentence:
    text: str  # without markers
    numbers: list[int]


def answer_sentences(text: str) -> list[CitedSentence]:
    """Sentences of a normalised answer with the numbers each cites.

    A marker written after the full stop ("... tree. [1] Next ...") belongs to the sentence
    before it, not to the one it happens to open.
    """
    out: list[CitedSentence] = []
    for sentence in split_sentences(text):
        body = sentence.text
        leading = _LEADING_MARKERS.match(body)
        if leading and out:
            out[-1].numbers.extend(int(k) for k in _NORMALISED.findall(leading.group()))
            body = body[leading.end() :]
        numbers = [int(k) for k in _NORMALISED.findall(body)]
        body = re.sub(r"\s*\[\d+\]", "", body).strip()  # "time [1]." -> "time."
        if body:
            out.append(CitedSentence(body, numbers))
    return out


@dataclass
class CheckResult:
    text: str
    invalid: list[str]
    unsupported: list[str]
    cited: list[int]  # valid source numbers, sorted
    claims: dict[int, list[str]] = field(default_factory=dict)  # source n -> sentences citing it
    not_in_kb: bool = False
    sentences: int = 0  # answer sentences with words


def check(text: str, sources: Sequence[Source]) -> CheckResult:
    normalised, invalid = normalise_markers(text, len(sources))
    source_terms = {s.n: terms(s.header + "\n" + s.text) for s in sources}
    source_scripts = {s.n: is_mainly_non_latin(s.text) for s in sources}
    unsupported: list[str] = []
    claims: dict[int, list[str]] = {}
    declines = False
    sentences = answer_sentences(normalised)
    for sentence in sentences:
        for k in dict.fromkeys(sentence.numbers):
            claims.setdefault(k, []).append(sentence.text)
        if says_not_in_kb(sentence.text):
            declines = True
            continue
        words = terms(plain(sentence.text))
        if len(words) < CITATIONS.min_terms:
            continue
        if sentence.numbers and all(is_mainly_non_latin(sentence.text) != source_scripts[k] for k in sentence.numbers):
            continue  # a translation of what its sources say: words cannot show support across scripts
        known = set().union(*(source_terms[k] for k in sentence.numbers)) if sentence.numbers else set()
        if len(words & known) / len(words) < CITATIONS.min_support:
            unsupported.append(sentence.text)
    cited = sorted({int(k) for k in _NORMALISED.findall(normalised)})
    return CheckResult(normalised, invalid, unsupported, cited, claims, declines, len(sentences))


def source_sentences(source: Source) -> list[Sentence]:
    """The source's sentences an answer can quote: headings left out, a Markdown one or a line
    of plain text standing above its paragraph (``Sentence.heading``)."""
    return [s for s in split_sentences(source.text) if not s.heading and not is_heading(s.text)]


def quotable_sentences(source: Source) -> list[Quotable]:
    """``source_sentences`` an answer may quote: FAQ question sentences left out, each of their
    answer sentences carrying the question (``faq_paired``)."""
    return faq_paired(source.text, source_sentences(source))


def best_sentence(source: Source, wanted: set[str]) -> Sentence | None:
    """The source sentence sharing the most terms with ``wanted`` (first one on ties)."""
    best, best_overlap = None, -1
    for sentence in source_sentences(source):
        overlap = len(terms(sentence.text) & wanted)
        if overlap > best_overlap:
            best, best_overlap = sentence, overlap
    return best


def citation_for(source: Source, sentence: Sentence | None) -> Citation:
    """A citation of ``source``, pointing at the matched child chunk that holds ``sentence``."""
    hit = source.hits[0]
    if sentence is not None:
        at = source.offset + sentence.start
        hit = next((h for h in source.hits if h.chunk.start <= at < h.chunk.end), hit)
    chunk = hit.chunk
    span = chunk_span(source, sentence, chunk.text, chunk.start) if sentence is not None else None
    where, at = _quoted_in(source, sentence, chunk, span)
    return Citation(
        n=source.n,
        chunk_id=chunk.id,
        doc_id=chunk.doc_id,
        source=chunk.source,
        title=chunk.title,
        page=where.page_at(at),
        section_path=where.section_at(at),
        snippet=shorten(plain(sentence.text)) if sentence is not None else shorten(source.text),
        highlights=[span] if span else [],
    )


def _quoted_in(source: Source, sentence: Sentence | None, chunk: Chunk, span: list[int] | None) -> tuple[Chunk, int]:
    """The chunk and offset whose section and page are the quoted sentence's: its place in the
    cited chunk, or, for a sentence of the context outside that chunk, in the context (a parent);
    the cited chunk's start when neither is known."""
    if span:
        return chunk, span[0]
    if sentence is not None and source.context.start <= source.offset + sentence.start < source.context.end:
        return source.context, source.offset + sentence.start - source.context.start
    return chunk, 0


def chunk_span(source: Source, sentence: Sentence, chunk_text: str, chunk_start: int) -> list[int] | None:
    """Where ``sentence`` (of ``source.text``) lies in a chunk's text, clipped to the chunk;
    None when it does not lie there (offsets unknown and the text not found)."""
    raw = source.text[sentence.start : sentence.end]
    lo = source.offset + sentence.start - chunk_start
    hi = lo + len(raw)
    if 0 <= lo < hi <= len(chunk_text) and chunk_text[lo:hi] == raw:
        return [lo, hi]
    clipped_lo, clipped_hi = max(lo, 0), min(hi, len(chunk_text))
    if clipped_lo < clipped_hi and chunk_text[clipped_lo:clipped_hi] == raw[clipped_lo - lo : clipped_hi - lo]:
        return [clipped_lo, clipped_hi]  # a sentence that runs over the chunk's edge
    at = chunk_text.find(raw)
    return [at, at + len(raw)] if raw and at >= 0 else None


def citations_for(result: CheckResult, sources: Sequence[Source]) -> list[Citation]:
    """One citation per source the checked text cites; the snippet supports its claims."""
    by_n = {s.n: s for s in sources}
    out = []
    for k in result.cited:
        source = by_n[k]
        wanted = terms(" ".join(result.claims.get(k, [])))
        out.append(citation_for(source, best_sentence(source, wanted)))
    return out
