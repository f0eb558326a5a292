"""Alias normalization: one function decides when two surface forms are the same name.

Used when an alias is stored and when it is looked up, by every store, by the gazetteer and by
query-time entity linking, so "ＬＣＡ", "lca" and "L.C.A." all meet at "lca".
``normalize_with_offsets`` is the same normalization for running text, which also remembers
where each normalized character came from (the gazetteer reports matches in original offsets).
"""

from __future__ import annotations

import bisect
import functools
import re
import sys
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kgrag.text.scripts import has_han

_PUNCT_OR_SPACE = re.compile(r"[\s\W_]+", re.UNICODE)
# Dots and apostrophes inside a name fold away entirely ("L.C.A." == "LCA", "O'Neil" ==
# "ONeil") rather than becoming a space; hyphens become a space ("Common-Ancestor").
_JOINERS = re.compile(r"(?<=\w)[.'’](?=\w)")
# The same two rules for running text: word runs, and the one-character gaps that join them.
_WORD_RUN = re.compile(r"[^\W_]+")
_JOINER_CHARS = frozenset(".'’")


@lru_cache(maxsize=1)
def _t2s() -> Any:
    """Traditional → simplified Chinese converter (OpenCC's C++ engine, a dependency: the
    ``opencc`` wheel ships its dictionaries). Phrase-level: 資料庫 → 资料库, 臺灣 → 台湾."""
    import opencc

    return opencc.OpenCC("t2s")


def to_simplified(text: str) -> str:
    """``text`` with traditional Chinese characters simplified (unchanged without Han
    characters). Alias normalization and BM25 analysis both fold through it."""
    if not has_han(text):
        return text
    return _t2s().convert(text)


def fold(text: str) -> str:
    """Full-width → half-width and other compatibility forms (NFKC), then case folding: the one
    folding every comparison of words and names in kgrag starts from."""
    return unicodedata.normalize("NFKC", text).casefold()


def fold_marks(text: str) -> str:
    """``fold`` with Latin diacritics dropped ("Akinoshū" matches "Akinoshu"). ASCII text
    is only lower-cased (what the rest does to it); the marks go through one ``str.translate``
    — a per-character generator here cost 2.2 s of 17 s retrieving 60 HotpotQA questions, as
    the graph path reads every page it reaches."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", fold(text))
    return unicodedata.normalize("NFC", decomposed.translate(_combining_marks()))


@functools.cache
def _combining_marks() -> dict[int, None]:
    """Every combining code point → deleted (``str.translate`` table; built once, ~0.2 s)."""
    return {cp: None for cp in range(sys.maxunicode + 1) if unicodedata.combining(chr(cp))}


@lru_cache(maxsize=200_000)
def normalize_alias(name: str) -> str:
    """``fold``, then punctuation and whitespace runs folded to single spaces."""
    s = fold(name)
    s = _JOINERS.sub("", s)
    s = _PUNCT_OR_SPACE.sub(" ", s).strip()
    return to_simplified(s)


@dataclass
class NormalizedText:
    """``normalize_alias(text)`` plus the way back to offsets in ``text``."""

    text: str
    # Runs of normalized characters that map one-to-one onto the case-folded text:
    # (normalized start, folded start). Spaces between runs map nowhere (no match ends on one).
    _run_norm: list[int]
    _run_folded: list[int]
    # folded index → original [start, end); None when case folding kept every offset.
    _folded_start: list[int] | None
    _folded_end: list[int] | None

    def _to_folded(self, k: int) -> int:
        i = bisect.bisect_right(self._run_norm, k) - 1
        return self._run_folded[i] + (k - self._run_norm[i])

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """Original offsets of normalized text[start:end] (both ends inside word runs)."""
        fs, fe = self._to_folded(start), self._to_folded(end - 1)
        if self._folded_start is None or self._folded_end is None:
            return fs, fe + 1
        return self._folded_start[fs], self._folded_end[fe]


def _fold(text: str) -> tuple[str, list[int] | None, list[int] | None]:
    """NFKC + case fold, keeping for each folded character the original span it came from."""
    if unicodedata.is_normalized("NFKC", text):
        folded = text.casefold()
        if len(folded) == len(text):
            return folded, None, None  # the common case: offsets unchanged
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i, n = 0, len(text)
    while i < n:
        j = i + 1
        while j < n and unicodedata.combining(text[j]):  # keep a base and its accents together
            j += 1
        piece = fold(text[i:j])
        parts.append(piece)
        starts.extend([i] * len(piece))
        ends.extend([j] * len(piece))
        i = j
    return "".join(parts), starts, ends


def normalize_with_offsets(text: str) -> NormalizedText:
    """Normalize like ``normalize_alias`` (which this must agree with) and build the offset map."""
    folded, folded_start, folded_end = _fold(text)
    out: list[str] = []
    run_norm: list[int] = []
    run_folded: list[int] = []
    length = 0
    previous_end = -1
    for m in _WORD_RUN.finditer(folded):
        if out:
            gap = folded[previous_end : m.start()]
            if not (len(gap) == 1 and gap in _JOINER_CHARS):  # "L.C.A." → "lca", "O'Neil" → "oneil"
                out.append(" ")
                length += 1
        run_norm.append(length)
        run_folded.append(m.start())
        out.append(m.group())
        length += m.end() - m.start()
        previous_end = m.end()
    normalized = "".join(out)
    simplified = to_simplified(normalized)
    if len(simplified) == len(normalized):  # phrase conversions that change length are skipped
        normalized = simplified
    return NormalizedText(normalized, run_norm, run_folded, folded_start, folded_end)
