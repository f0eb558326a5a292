"""Alias gazetteer: find every known alias in a text, so that "LCA", "Lowest Common Ancestor" and
"最近公共祖先" all link to one entity without a model.

How matching works. The text is normalized exactly as ``normalize_alias`` normalizes an alias
(NFKC, case fold, dots/apostrophes inside words dropped, other punctuation and whitespace
folded to one space), while an offset map remembers where each normalized character came
from. The normalized text is cut into units: a Latin/digit word is one unit, each kana or Han
character is one unit (``scripts.UNSPACED``: Chinese has no spaces, so a name may start at any
character). From every unit (``find_aliases``),
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

Ingestion and late linking (``kgrag.aliases.linking``) hold the whole alias table in a
``Gazetteer``. Query linking, which must see an alias the moment the admin adds it, asks the
graph store only for ``candidate_aliases(question)`` (every unit n-gram the matcher could try)
and matches with a ``Gazetteer`` over what it returned: one loop and one set of rules for all.
"""

from __future__ import annotations

import importlib.util
import re
import runpy
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from kgrag.text.normalize import normalize_alias, normalize_with_offsets
from kgrag.text.scripts import UNSPACED

_UNIT = re.compile(f"[{UNSPACED}]|[^\\W_{UNSPACED}]+")  # one unspaced character, or one word
MAX_UNITS = 32  # longest alias, in units, that can match (a 32-character Chinese name)


@dataclass(frozen=True)
class GazetteerMatch:
    start: int  # character offsets into the original text
    end: int
    surface: str  # text[start:end]
    normalized: str  # the alias that matched
    entity_keys: tuple[str, ...]  # more than one: an ambiguous alias


@lru_cache(maxsize=1)
def english_stop_words() -> frozenset[str]:
    """spaCy's English stop words: a one-word alias among them matches only in capitals.

    Read from spaCy's own file without importing spaCy: ``import spacy`` imports thinc, which
    imports torch when installed — 1–2 s of a server's start that answers no question with
    spaCy (the word list is a plain module with no imports)."""
    spec = importlib.util.find_spec("spacy")  # finds the package without importing it
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        path = Path(root) / "lang" / "en" / "stop_words.py"
        if path.is_file():
            return frozenset(runpy.run_path(str(path))["STOP_WORDS"])
    from spacy.lang.en.stop_words import STOP_WORDS  # an unusual install: import it

    return frozenset(STOP_WORDS)


def units(normalized: str) -> list[tuple[int, int]]:
    """Spans of the units of a normalized text: each word, and each unspaced (CJK) character."""
    return [m.span() for m in _UNIT.finditer(normalized)]


def find_aliases(
    normalized: str, aliases: Container[str] | None, prefixes: Container[str] | None
) -> list[tuple[int, int, str]]:
    """Every run of 1 to ``MAX_UNITS`` consecutive units of a normalized text that is a
    matchable alias in ``aliases`` (None: any matchable piece), as ``(start, end, piece)``: from
    each unit in order, growing one unit at a time. The growth from a unit stops after a piece
    not in ``prefixes`` (None: never) — no alias can continue it. The one n-gram loop of
    ingestion, late linking and query linking (``Gazetteer.match``, ``candidate_aliases``)."""
    spans = units(normalized)
    found: list[tuple[int, int, str]] = []
    for i, (start, _) in enumerate(spans):
        for j in range(i, min(i + MAX_UNITS, len(spans))):
            end = spans[j][1]
            piece = normalized[start:end]
            if (aliases is None or piece in aliases) and matchable(piece):
                found.append((start, end, piece))
            if prefixes is not None and piece not in prefixes:
                break
    return found


def candidate_aliases(text: str) -> list[str]:
    """Every normalized piece of ``text`` that could be a matchable alias, in first-seen order:
    what a store lookup must be asked for so that a ``Gazetteer`` over the aliases it finds
    matches ``text`` exactly as one over the whole alias table would."""
    pieces = find_aliases(normalize_with_offsets(text).text, None, None)
    return list(dict.fromkeys(piece for _, _, piece in pieces))


def matchable(normalized: str) -> bool:
    """Whether an alias is matched in running text: two characters or more, not a bare number."""
    return len(normalized) >= 2 and not normalized.replace(" ", "").isdigit()


class Gazetteer:
    """normalized alias → entity keys, with a matcher over running text."""

    def __init__(self, alias_table: Mapping[str, Sequence[str]] | None = None, any_case: Iterable[str] = ()):
        self._keys: dict[str, list[str]] = {}
        self._prefixes: dict[str, int] = {}  # unit-boundary prefix of a matchable alias → how many
        self._any_case: set[str] = {normalize_alias(a) for a in any_case}
        self._stop = english_stop_words()
        for alias, keys in (alias_table or {}).items():
            for key in keys:
                self._insert(normalize_alias(alias), key)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, alias: str) -> bool:
        return normalize_alias(alias) in self._keys

    def items(self) -> Iterable[tuple[str, list[str]]]:
        """(normalized alias, entity keys) pairs."""
        return self._keys.items()

    def add(self, alias: str, entity_key: str, any_case: bool = False) -> None:
        """Register a surface form of an entity (normalized here). ``any_case``: also match it
        written in lower case (curated terms); see the module docstring."""
        normalized = normalize_alias(alias)
        if not normalized:
            return
        if any_case:
            self._any_case.add(normalized)
        self._insert(normalized, entity_key)

    def curated(self, normalized: str) -> bool:
        """Whether a normalized alias was added to match in any case (a curated name)."""
        return normalized in self._any_case

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
        keys = self._keys
        candidates = find_aliases(normalized, keys, self._prefixes)
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
        return [normalized[:end] for _, end in units(normalized)[:-1]]

    def _case_ok(self, alias: str, surface: str) -> bool:
        if " " in alias or surface.lower() == surface.upper():
            return True  # multi-word, or a script without case (CJK, Hangul, Arabic)
        if alias in self._stop:
            # Even when curated: a glossary's "IT" (information technology) is not every "it".
            return surface.isupper()
        return alias in self._any_case or any(ch.isupper() or ch.isdigit() for ch in surface)
