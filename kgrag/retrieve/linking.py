"""Query-time entity linking: which entities of the graph does the question name?

Exact first: every run of words (and of CJK characters) in the normalized question is looked
up in the graph's alias table in one round trip (``GraphReader.lookup_aliases`` of
``candidate_aliases``), so an alias added by the admin a moment ago links at once — there is no
cached table to go stale. The aliases found are matched by the gazetteer ingestion uses
(``kgrag.lexicon.gazetteer``): longest matches win and do not overlap.

Then fuzzy, only for the capitalized or quoted spans of the question that did not link
exactly ("Lowest Commn Ancestor", "Kiefer Sutherlnd"): rapidfuzz against the alias list,
which is cached and refreshed every ``FUZZY_TTL_S`` seconds (in the background: the question
that finds it stale uses the old list, since reading the table took ~3 s at 100k passages) or
at once after ``invalidate()``.

Case: an entity learned from the corpus (NER, titles) links only where the question writes it
with a capital, a digit or in a script without case (Chinese): linking lower-case words
("year", "university", "film") to the entities that share their spelling floods the graph path
with generic neighbourhoods (docs/decisions.md, "Learned entities link only where written with
a capital"). Curated
entities (glossary, alias admin) link in any case: a person vouched for them. English stop
words must be written in capitals ("US", "IT").
An alias claimed by several entities links to all of them; the trace shows the candidates.

Across scripts, by pinyin: a capitalized Latin word of the question that did not link otherwise
and spells a Chinese name of the graph in toneless pinyin ("Guangzhou" → 广州, "Mao Zedong" →
毛泽东) links to it (``kgrag.retrieve.cross_script.pinyin_of``), so an English question about a
Chinese place or person reaches the Chinese passages naming it through the graph and BM25.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from kgrag.config import RetrievalSettings
from kgrag.lexicon.gazetteer import Gazetteer, candidate_aliases, english_stop_words
from kgrag.retrieve.background_cache import Refreshed, unless_unchanged
from kgrag.retrieve.cross_script import pinyin_of
from kgrag.retrieve.describe import DescriptionLinker
from kgrag.retrieve.tuning import LINKING
from kgrag.retrieve.types import LinkedEntity
from kgrag.stores.base import GraphReader
from kgrag.text.normalize import normalize_alias
from kgrag.text.scripts import has_han
from kgrag.types import ANY_CASE_TYPES, IDENTIFIER, SECTION, Entity

FUZZY_TTL_S = 60.0
# Capitalized word runs ("Kiefer Sutherland", "New York City") and quoted strings.
_CAPITALIZED = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:of|the|de|von|van|and|&)?\s*[A-Z][\w'’.-]*)*")
# A capitalized Latin word, as a name written in pinyin is ("Guangzhou", "Maoming", "Zedong").
_LATIN_NAME_WORD = re.compile(r"\b[A-Z][a-z]{2,}\b")
_QUOTED = re.compile(r"[\"“”'‘’「『《]([^\"“”‘’」』》]{3,80})[\"“”'‘’」』》]")


class EntityLinker:
    def __init__(self, graph: GraphReader,
                 fuzzy_threshold: float = RetrievalSettings.model_fields["fuzzy_link_threshold"].default):
        self.graph = graph
        self.fuzzy_threshold = fuzzy_threshold
        self._stop = english_stop_words()
        self._fuzzy_list: Refreshed[_FuzzyList] = Refreshed(
            lambda previous: self._read_alias_list(previous), FUZZY_TTL_S, "kgrag-alias-list")
        self.describer = DescriptionLinker(graph)
        self._pinyin_index: Refreshed[_PinyinIndex] = Refreshed(
            lambda previous: unless_unchanged(self.graph.alias_table(), previous, _PinyinIndex.of),
            FUZZY_TTL_S, "kgrag-pinyin-index")

    def invalidate(self) -> None:
        """Drop the cached alias lists used for fuzzy and described matching (the alias admin
        calls this)."""
        self._fuzzy_list.invalidate()
        self._pinyin_index.invalidate()
        self.describer.invalidate()

    # -- public ------------------------------------------------------------------------------
    def link(self, question: str) -> list[LinkedEntity]:
        linked, taken = self._exact(question)
        linked += self._fuzzy(question, taken, {le.key for le in linked})
        linked += self._pinyin(question, taken, {le.key for le in linked})
        return linked

    def described(self, question: str, linked: Sequence[LinkedEntity]) -> list[LinkedEntity]:
        """Headings and terms the question describes in its own words, none of ``linked``:
        extra graph seeds (``kgrag.retrieve.describe``)."""
        return self.describer.link(question, linked)

    def expansions(self, linked: Sequence[LinkedEntity]) -> list[str]:
        """Surface forms of the linked entities that the question did not already use: BM25
        terms, so a question saying "LCA" also matches text saying "最近公共祖先"."""
        used = {normalize_alias(le.surface) for le in linked}
        out: list[str] = []
        for le in linked:
            entity = self.graph.get_entity(le.key)
            # A section heading's other spelling ("Feature Channels (f_)") is its own title,
            # which BM25 already searches: expanding by it ranks the named section above the one
            # a follow-up asks about. Terms the extractor learned (not curated) link the graph but
            # do not widen the keyword query: their other spellings pull in generic matches
            # (docs/decisions.md, "Domain terms and structure": BM25 expansion).
            if entity is None or entity.type == SECTION:
                continue
            forms = [entity.name, *entity.aliases]
            if entity.type in ANY_CASE_TYPES and not entity.curated:
                # ... except its name in the other script: an English question reaches Chinese
                # text saying "单点登录" (defined as "单点登录（Single Sign-On，简称 SSO）") only so.
                forms = [f for f in forms if has_han(f) != has_han(le.surface)]
            added = 0
            for form in forms:
                norm = normalize_alias(form)
                if norm and norm not in used and added < LINKING.max_expansions_per_entity:
                    used.add(norm)
                    out.append(form)
                    added += 1
        return out

    # -- exact -------------------------------------------------------------------------------
    def _exact(self, question: str) -> tuple[list[LinkedEntity], list[tuple[int, int]]]:
        """Linked entities and the question spans they cover."""
        spans: list[tuple[int, int]] = []
        grams = candidate_aliases(question)
        if not grams:
            return [], spans
        table = self.graph.lookup_aliases(grams)
        if not table:
            return [], spans
        # A throwaway gazetteer over just the aliases found: reuses its longest-match,
        # non-overlapping matcher.
        gazetteer = Gazetteer(table, any_case=[a for a in table if a not in self._stop])
        out: list[LinkedEntity] = []
        entities = {}
        for match in gazetteer.match(question):
            for key in match.entity_keys:
                if key not in entities:
                    entities[key] = self.graph.get_entity(key)
            surface = match.surface
            cased = (surface.lower() != surface  # a capital letter
                     or surface.lower() == surface.upper()  # a script without case (CJK)
                     or any(c.isdigit() for c in surface))
            keys = sorted(k for k in match.entity_keys
                          if cased or _any_case(entities[k], question, match.start, match.end))
            if not keys:
                continue
            spans.append((match.start, match.end))
            names = {k: e.name if (e := entities[k]) else k for k in keys}
            for key in keys:
                out.append(
                    LinkedEntity(
                        surface=match.surface, key=key, name=names[key], method="exact",
                        score=1.0, candidates=keys if len(keys) > 1 else [],
                    )
                )
        return _dedupe(out), spans

    # -- fuzzy -------------------------------------------------------------------------------
    def _fuzzy(self, question: str, taken: list[tuple[int, int]], known: set[str]) -> list[LinkedEntity]:
        spans = []
        for pattern in (_QUOTED, _CAPITALIZED):
            for m in pattern.finditer(question):
                start, end = m.span(1) if pattern is _QUOTED else m.span()
                text = question[start:end].strip(" .,'’")
                # Short spans fuzz-match the wrong word ("Flight" ~ "Light"): 8 characters at least.
                if len(text) < LINKING.min_fuzzy_chars or normalize_alias(text) in self._stop:
                    continue
                if any(s < end and start < e for s, e in taken):
                    continue  # already linked exactly (wholly or in part)
                spans.append(text)
        if not spans:
            return []
        from rapidfuzz import fuzz, process

        _, aliases, keys = self._fuzzy_list.get()
        out: list[LinkedEntity] = []
        for text in dict.fromkeys(spans):
            query = normalize_alias(text)
            best = process.extractOne(
                query, aliases, scorer=fuzz.ratio, score_cutoff=self.fuzzy_threshold
            )
            if best is None:
                continue
            _, score, index = best
            candidates = sorted(keys[index])
            for key in candidates:
                if key in known:
                    continue
                entity = self.graph.get_entity(key)
                out.append(
                    LinkedEntity(
                        surface=text, key=key, name=entity.name if entity else key,
                        method="fuzzy", score=round(score / 100.0, 3),
                        candidates=candidates if len(candidates) > 1 else [],
                    )
                )
        return _dedupe(out)

    # -- pinyin ------------------------------------------------------------------------------
    def _pinyin(self, question: str, taken: list[tuple[int, int]], known: set[str]) -> list[LinkedEntity]:
        """Entities with a Chinese name that a capitalized Latin word of the question (or two
        of them written apart: "Mao Zedong") spells in toneless pinyin."""
        words = [(m.start(), m.end(), m.group().casefold()) for m in _LATIN_NAME_WORD.finditer(question)
                 if not any(s < m.end() and m.start() < e for s, e in taken)
                 and m.group().casefold() not in self._stop]
        if not words:
            return []
        spellings = [(w, surface_start, end) for surface_start, end, w in words]
        spellings += [(a[2] + b[2], a[0], b[1]) for a, b in zip(words, words[1:], strict=False)
                      if question[a[1] : b[0]].strip() in ("", "-", "–")]
        index = self._pinyin_index.get()
        if not index.by_pinyin:
            return []
        out: list[LinkedEntity] = []
        for spelled, start, end in spellings:
            keys = sorted(set(index.by_pinyin.get(spelled, ())) - known)
            for key in keys:
                entity = self.graph.get_entity(key)
                out.append(LinkedEntity(surface=question[start:end], key=key, name=entity.name if entity else key,
                                        method="pinyin", score=LINKING.pinyin_confidence,
                                        candidates=keys if len(keys) > 1 else []))
        return _dedupe(out)

    def _read_alias_list(self, previous: _FuzzyList | None) -> _FuzzyList:
        """The aliases long enough to fuzz-match; ``previous`` itself when the table is the same
        (the embedded store keeps it until the file changes: re-listing its 170k aliases at 100k
        passages every minute was seconds of a request thread's GIL time)."""
        return unless_unchanged(self.graph.alias_table(), previous, _FuzzyList.of)


class _FuzzyList(NamedTuple):
    """The alias table read, and its aliases long enough to fuzz-match with their entity keys."""

    table: dict[str, list[str]]
    aliases: list[str]
    keys: list[list[str]]

    @staticmethod
    def of(table: dict[str, list[str]]) -> _FuzzyList:
        items = [(a, ks) for a, ks in table.items() if len(a) >= LINKING.min_fuzzy_chars - 2]
        return _FuzzyList(table, [a for a, _ in items], [list(ks) for _, ks in items])


class _PinyinIndex(NamedTuple):
    """The alias table read, and its Chinese aliases of two to ``LINKING.pinyin_max_han``
    characters by their toneless pinyin (``cross_script.pinyin_of``)."""

    table: dict[str, list[str]]
    by_pinyin: dict[str, list[str]]

    @staticmethod
    def of(table: dict[str, list[str]]) -> _PinyinIndex:
        by_pinyin: dict[str, list[str]] = {}
        for alias, keys in table.items():
            if 2 <= len(alias) <= LINKING.pinyin_max_han and all(has_han(c) for c in alias):
                by_pinyin.setdefault(pinyin_of(alias), []).extend(keys)
        return _PinyinIndex(table, by_pinyin)


def _any_case(entity: Entity | None, question: str, start: int, end: int) -> bool:
    """Whether a lower-case match still names ``entity``: a curated one (a person vouched for
    it), a term of the team's documents written as a phrase of two words or more ("fiscal
    quarter"), or an identifier written with its marker ("#ciso", "proj_", "@gl-team")."""
    if entity is None:
        return False
    if entity.curated:
        return True
    if entity.type not in ANY_CASE_TYPES:
        return False
    marked = question[start - 1 : start] in ("#", "@") or question[end : end + 1] == "_"
    return len(question[start:end].split()) >= 2 or (entity.type == IDENTIFIER and marked)


def _dedupe(linked: list[LinkedEntity]) -> list[LinkedEntity]:
    seen: set[str] = set()
    out = []
    for le in linked:
        if le.key not in seen:
            seen.add(le.key)
            out.append(le)
    return out
