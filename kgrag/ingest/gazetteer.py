"""Alias gazetteer: find every known alias in a text, so that "LCA", "Lowest Common Ancestor" and
"最近公共祖先" all link to one entity without a model.

How matching works. The text is normalized exactly as ``normalize_alias`` normalizes an alias
(NFKC, case fold, dots/apostrophes inside words dropped, other punctuation and whitespace
folded to one space), while an offset map remembers where each normalized character came
from. The normalized text is cut into units: a Latin/digit word is one unit, each CJK character
is one unit (Chinese has no spaces, so a name may start at any character). From every unit,
candidate strings are extended unit by unit and looked up in a dict of aliases; a second dict
of alias prefixes stops the extension as soon as no alias can continue (a trie held in two
dicts, which keeps ``add`` O(length) — the extractor adds names after every document, and
rebuilding an automaton that often would cost more than the matching). Because units are whole
words, "cat" never matches inside "category". Longest match wins; matches do not overlap.

Two guards keep common words from linking to entities learned by NER:
* a one-word Latin alias matches only where the text writes it with a capital or a digit
  ("May" the person is not every "may"), unless the alias was added with ``any_case=True``
  (glossary terms such as "heap" or "recursion");
* a one-word alias that is an English stop word matches only when written in capitals
  ("US", "IT", "WHO"), never "It" at the start of a sentence, ``any_case`` or not.
Aliases shorter than two characters and bare numbers are never matched (they are still
returned by ``lookup``).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kgrag.text.normalize import _t2s, normalize_alias

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # kana and Han: one unit per char
_UNIT = re.compile(f"[{_CJK}]|[^\\W_{_CJK}]+")
_WORD_RUN = re.compile(r"[^\W_]+")
_JOINER_CHARS = frozenset(".'’")
_HAS_CJK = re.compile(f"[{_CJK}]")
MAX_UNITS = 32  # longest alias, in units, that can match (a 32-character Chinese name)


@dataclass(frozen=True)
class GazetteerMatch:
    start: int  # character offsets into the original text
    end: int
    surface: str  # text[start:end]
    normalized: str  # the alias that matched
    entity_keys: tuple[str, ...]  # more than one: an ambiguous alias


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
        if self._folded_start is None:
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
        piece = unicodedata.normalize("NFKC", text[i:j]).casefold()
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
    converter = _t2s()
    if converter is not None and _HAS_CJK.search(normalized):
        simplified = converter.convert(normalized)
        if len(simplified) == len(normalized):  # phrase conversions that change length are skipped
            normalized = simplified
    return NormalizedText(normalized, run_norm, run_folded, folded_start, folded_end)


def _stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def _units(normalized: str) -> list[tuple[int, int]]:
    return [m.span() for m in _UNIT.finditer(normalized)]


def matchable(normalized: str) -> bool:
    """Whether an alias is matched in running text: two characters or more, not a bare number."""
    return len(normalized) >= 2 and not normalized.replace(" ", "").isdigit()


class Gazetteer:
    """normalized alias → entity keys, with a matcher over running text."""

    def __init__(self, alias_table: Mapping[str, Sequence[str]] | None = None, any_case: Iterable[str] = ()):
        self._keys: dict[str, list[str]] = {}
        self._prefixes: dict[str, int] = {}  # unit-boundary prefix of a matchable alias → how many
        self._any_case: set[str] = {normalize_alias(a) for a in any_case}
        self._stop = _stop_words()
        for alias, keys in (alias_table or {}).items():
            for key in keys:
                self._insert(normalize_alias(alias), key)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, alias: str) -> bool:
        return normalize_alias(alias) in self._keys

    def add(self, alias: str, entity_key: str, any_case: bool = False) -> None:
        """Register a surface form of an entity (normalized here). ``any_case``: also match it
        written in lower case (curated terms); see the module docstring."""
        normalized = normalize_alias(alias)
        if not normalized:
            return
        if any_case:
            self._any_case.add(normalized)
        self._insert(normalized, entity_key)

    def remove(self, alias: str, entity_key: str) -> bool:
        """Forget one alias → key link; False when it was not there."""
        normalized = normalize_alias(alias)
        keys = self._keys.get(normalized)
        if not keys or entity_key not in keys:
            return False
        keys.remove(entity_key)
        if not keys:
            del self._keys[normalized]
            if matchable(normalized):
                for prefix in self._alias_prefixes(normalized):
                    self._prefixes[prefix] -= 1
                    if not self._prefixes[prefix]:
                        del self._prefixes[prefix]
        return True

    def lookup(self, name: str) -> list[str]:
        """Entity keys whose alias equals ``name`` after normalization (exact)."""
        return list(self._keys.get(normalize_alias(name), ()))

    def match(self, text: str) -> list[GazetteerMatch]:
        """Every alias occurrence in ``text``: longest first, non-overlapping, sorted by start."""
        if not self._keys or not text:
            return []
        norm = normalize_with_offsets(text)
        normalized = norm.text
        units = _units(normalized)
        candidates: list[tuple[int, int, str]] = []
        keys, prefixes = self._keys, self._prefixes
        for i, (start, _) in enumerate(units):
            for j in range(i, min(i + MAX_UNITS, len(units))):
                piece = normalized[start : units[j][1]]
                if piece in keys and matchable(piece):
                    candidates.append((start, units[j][1], piece))
                if piece not in prefixes:
                    break
        chosen: list[GazetteerMatch] = []
        taken = bytearray(len(normalized))
        for start, end, alias in sorted(candidates, key=lambda c: (c[0] - c[1], c[0])):
            if any(taken[start:end]):
                continue
            o_start, o_end = norm.original_span(start, end)
            surface = text[o_start:o_end]
            if not self._case_ok(alias, surface):
                continue
            taken[start:end] = b"\x01" * (end - start)
            chosen.append(GazetteerMatch(o_start, o_end, surface, alias, tuple(keys[alias])))
        chosen.sort(key=lambda m: m.start)
        return chosen

    # -- internals -------------------------------------------------------------------------
    def _insert(self, normalized: str, key: str) -> None:
        keys = self._keys.get(normalized)
        if keys is None:
            self._keys[normalized] = [key]
            if matchable(normalized):
                for prefix in self._alias_prefixes(normalized):
                    self._prefixes[prefix] = self._prefixes.get(prefix, 0) + 1
        elif key not in keys:
            keys.append(key)

    @staticmethod
    def _alias_prefixes(normalized: str) -> list[str]:
        """Proper prefixes of an alias that end on a unit boundary ("lowest", "lowest common")."""
        return [normalized[:end] for _, end in _units(normalized)[:-1]]

    def _case_ok(self, alias: str, surface: str) -> bool:
        if " " in alias or surface.lower() == surface.upper():
            return True  # multi-word, or a script without case (CJK, Hangul, Arabic)
        if alias in self._stop:
            # Even when curated: a glossary's "IT" (information technology) is not every "it".
            return surface.isupper()
        return alias in self._any_case or any(ch.isupper() or ch.isdigit() for ch in surface)
