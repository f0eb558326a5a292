"""Extraction stage: chunks → entities, mentions and co-occurrence relations, without an LLM.

For every searchable chunk, names come from two sources: NER spans (spaCy / jieba, see
``kgrag.models.ner``) and gazetteer matches (every alias already known, see
``kgrag.lexicon.gazetteer``). Where they overlap the longer span wins, and on a tie the
gazetteer (it knows the entity). A name resolves to entity keys by exact normalized lookup in
the gazetteer; an unknown name becomes a new entity whose key is its normalized form. An
ambiguous alias links to every candidate entity (all get a mention; the alias admin resolves
ambiguity later), and alternatives of one surface are never related to each other.

The document title is an entity too, mentioned in every chunk of its document, when it is
short enough to be a name (``kgrag.lexicon.titles``, which also gives its aliases).
Wikipedia-style corpora title each paragraph with the entity it is about,
and the paragraph often says "It was founded in 1755" without repeating the name: the title
entity is what connects such a chunk to the graph.

Relations: one CO_OCCURS relation per pair of distinct entities per chunk, weight 1.0, so the
store's per-edge sum is the number of chunks that mention both. (Weighting by mention counts
would reward repetition inside one chunk, which is style rather than evidence.) A chunk
naming more than ``max_entities_per_chunk`` entities relates only its most mentioned ones
(the title entity always among them); every mention is still recorded.

Documents are processed in order, and after each one its new names join the gazetteer, so
later documents match them: the same documents in the same order over the same gazetteer give
the same output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import TYPE_CHECKING, TypeVar

from kgrag.config import ExtractionSettings
from kgrag.ingest.role_titles import LEADS_WEIGHT, AwaitedUnits, stored_role_units
from kgrag.lexicon.entity_rules import is_noise_name, parenthesised_alias_keys
from kgrag.lexicon.gazetteer import Gazetteer, GazetteerMatch, matchable
from kgrag.lexicon.headings import heading_name
from kgrag.lexicon.places import PLACE_LABELS, place_evidenced
from kgrag.lexicon.titles import SECTION_SEPARATOR, is_name_like_title, section_heading, title_aliases
from kgrag.models.ner import EntityRecognizer, Span
from kgrag.text.normalize import normalize_alias
from kgrag.types import (
    ALIAS_OF,
    ANY_CASE_TYPES,
    CO_OCCURS,
    CONCEPT,
    LEADS,
    SECTION,
    TERM,
    TITLE,
    Chunk,
    Entity,
    Mention,
    Relation,
)

if TYPE_CHECKING:
    from kgrag.ingest.llm_extract import LLMExtractor
    from kgrag.ingest.terms import DocumentTerms, Link, TermExtractor

_TITLE_SPAN = -1  # span id of the title pseudo-mention
# Entity types a role title may lead: an organisation's units are named by headings, table
# entries, terms and titles, or NER's ORG; never a PERSON, a place or a date.
_UNIT_TYPES = ANY_CASE_TYPES | {CONCEPT, TITLE, "ORG"}


@dataclass
class Extraction:
    entities: list[Entity] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)


@dataclass(frozen=True)
class _Name:
    """One resolved name occurrence in a chunk."""

    start: int
    end: int
    surface: str
    keys: tuple[str, ...]
    type: str | None  # NER label, None when no NER span covers exactly this text


@dataclass
class _EntityState:
    name: str
    type: str
    aliases: list[str] = field(default_factory=list)


_Item = TypeVar("_Item")


def _select(candidates: list[tuple[int, int, int, _Item]], length: int) -> list[tuple[int, int, int, _Item]]:
    """Longest first, then by priority (lower wins), then leftmost; no two may overlap."""
    taken = bytearray(length)
    chosen = []
    for cand in sorted(candidates, key=lambda c: (c[0] - c[1], c[2], c[0])):
        start, end = cand[0], cand[1]
        if end <= start or any(taken[start:end]):
            continue
        taken[start:end] = b"\x01" * (end - start)
        chosen.append(cand)
    chosen.sort(key=lambda c: c[0])
    return chosen


class Extractor:
    def __init__(self, settings: ExtractionSettings, gazetteer: Gazetteer, recognizer: EntityRecognizer | None,
                 terms: TermExtractor | None = None, llm: LLMExtractor | None = None):
        self.settings = settings
        self.terms = terms  # domain terms and structure (kgrag.ingest.terms); None: NER only
        self.llm = llm  # optional LLM extraction (kgrag.ingest.llm_extract); None: off
        self.gazetteer = gazetteer
        self.recognizer = recognizer
        # Name and type of every entity this extractor created, so a later document that links
        # to it by alias reports the same name and type.
        self._known: dict[str, _EntityState] = {}
        self._awaited = AwaitedUnits()  # role titles whose unit no entity named yet
        if terms is not None and terms.structure:
            self._await_stored_units()

    def extract(self, chunks: Sequence[Chunk]) -> Extraction:
        """Entities, mentions and relations of one document's searchable chunks."""
        return self.extract_many([chunks])[0]

    def extract_many(self, documents: Sequence[Sequence[Chunk]]) -> list[Extraction]:
        """``extract`` for several documents in order; NER runs over all their chunks in one
        batch (it does not depend on the gazetteer), then each document is resolved in turn."""
        texts = [chunk.text for chunks in documents for chunk in chunks]
        if self.terms is not None:
            from kgrag.ingest.terms import ner_text

            texts = [ner_text(c.text) if self.terms.chosen(chunks) else c.text for chunks in documents for c in chunks]
        spans = self.recognizer.recognize(texts) if self.recognizer is not None and texts else [[] for _ in texts]
        terms = self.terms.extract(documents) if self.terms is not None else [None] * len(documents)
        results = []
        offset = 0
        for chunks, doc_terms in zip(documents, terms, strict=True):
            doc_spans = spans[offset : offset + len(chunks)]
            separate: list[tuple[str, str]] = []
            if doc_terms is not None:
                doc_spans = [ner + extra for ner, extra in zip(doc_spans, doc_terms.spans, strict=True)]
                separate = self._learn_aliases(doc_terms)
            results.append(self._extract_document(chunks, doc_spans, doc_terms, separate))
            offset += len(chunks)
        return results

    # -- one document ----------------------------------------------------------------------
    def _extract_document(self, chunks: Sequence[Chunk], spans: Sequence[list[Span]],
                          doc_terms: DocumentTerms | None = None,
                          separate: Sequence[tuple[str, str]] = ()) -> Extraction:
        full_title = chunks[0].title.strip() if chunks else ""
        title = section_heading(full_title)  # "Page > Heading": the section is about its heading
        if SECTION_SEPARATOR in full_title:  # … when the heading names something
            title = heading_name(title, doc_terms.defines if doc_terms is not None else lambda _: False) or ""
        title_keys: tuple[str, ...] = ()
        if is_name_like_title(title):
            title_keys = self._register_title(title)
        entities: dict[str, _EntityState] = {}
        mentions: list[Mention] = []
        relations: list[Relation] = []
        for key in title_keys:
            state = self._note_entity(entities, key, title, None)
            for alias in title_aliases(title):
                if normalize_alias(alias) not in {key, *map(normalize_alias, state.aliases)}:
                    state.aliases.append(alias)
        for chunk, chunk_spans in zip(chunks, spans, strict=True):
            names = self._names(chunk.text, chunk_spans)
            counts: dict[str, int] = {}
            first: dict[str, tuple[int, str]] = {}  # key → (position, surface) of first mention
            span_ids: dict[str, set[int]] = {}
            for span_id, name in enumerate(names):
                for key in name.keys:
                    counts[key] = counts.get(key, 0) + 1
                    first.setdefault(key, (name.start, name.surface))
                    span_ids.setdefault(key, set()).add(span_id)
                    self._note_entity(entities, key, name.surface, name.type)
            for key in title_keys:
                counts[key] = max(counts.get(key, 0), 1)
                first.setdefault(key, (-1, title))
                span_ids.setdefault(key, set()).add(_TITLE_SPAN)
            for key in sorted(counts):
                mentions.append(Mention(key, chunk.id, counts[key], first[key][1]))
            relations.extend(self._relations(chunk.id, counts, first, span_ids, title_keys))
            if self.llm is not None:
                self._merge_llm(chunk, set(counts), entities, mentions, relations)
        for key in title_keys:
            titled = entities.get(key)
            if titled is not None and key not in self._known and titled.type == CONCEPT:
                titled.type = SECTION if SECTION_SEPARATOR in full_title else TITLE
        if doc_terms is not None and chunks:
            self._structure(doc_terms, list(separate), chunks[0].id, entities, mentions, relations)
            self._units_arrived(entities, mentions, relations)
        self._learn(entities)
        return Extraction(
            entities=[Entity(key, s.name, s.type, list(s.aliases)) for key, s in sorted(entities.items())],
            mentions=mentions,
            relations=relations,
        )

    def _register_title(self, title: str) -> tuple[str, ...]:
        """Resolve the title to entity keys and let the gazetteer match its spellings in the
        document's own chunks (so their mentions are counted)."""
        keys = (self.gazetteer.lookup(title) or parenthesised_alias_keys(title, self.gazetteer.lookup)
                or [normalize_alias(title)])
        for alias in title_aliases(title):
            for key in keys:
                self.gazetteer.add(alias, key)
        return tuple(keys)

    def _names(self, text: str, spans: Sequence[Span]) -> list[_Name]:
        """NER spans and gazetteer matches of one chunk text, resolved, without overlaps."""
        matches = self.gazetteer.match(text)
        # A place label stands only with evidence; without it the name stays untyped.
        spans = [s if s.type not in PLACE_LABELS or place_evidenced(text, s.start, s.end) else replace(s, type=CONCEPT)
                 for s in spans]
        # A glossary or NER name is never swallowed by a longer noun phrase ("LCA query",
        # "Lowest Common Ancestor query"): the name keeps its mention.
        held = {f" {m.normalized} " for m in matches if self.gazetteer.curated(m.normalized)}
        held |= {f" {normalize_alias(s.text)} " for s in spans if s.type not in ANY_CASE_TYPES}
        if held:
            spans = [s for s in spans if s.type != TERM or not _holds_name(normalize_alias(s.text), held)]
        candidates: list[tuple[int, int, int, GazetteerMatch | Span]] = [(m.start, m.end, 0, m) for m in matches]
        candidates += [(s.start, s.end, 1, s) for s in spans]
        # A gazetteer match exactly covering an NER span keeps the NER label (the title "鲁迅"
        # is in the gazetteer before its chunks are read, and jieba says it is a PERSON).
        ner_types = {(s.start, s.end): s.type for s in spans}
        names = []
        for start, end, _, item in _select(candidates, len(text)):
            if isinstance(item, Span):
                normalized = normalize_alias(item.text)
                if not matchable(normalized) or is_noise_name(item.text):
                    continue
                keys = (tuple(self.gazetteer.lookup(item.text))
                        or tuple(parenthesised_alias_keys(item.text, self.gazetteer.lookup)) or (normalized,))
                names.append(_Name(start, end, item.text, keys, item.type))
            else:
                names.append(_Name(start, end, item.surface, item.entity_keys, ner_types.get((start, end))))
        return names

    def _note_entity(self, entities: dict[str, _EntityState], key: str, surface: str, ner_type: str | None) -> _EntityState:
        state = entities.get(key)
        if state is None:
            known = self._known.get(key)
            if known is not None:
                state = _EntityState(known.name, known.type, list(known.aliases))
            else:
                state = _EntityState(surface, ner_type or CONCEPT)
            entities[key] = state
        elif state.type == CONCEPT and ner_type and key not in self._known:
            state.type = ner_type  # first NER label seen names an entity first met by alias
        return state

    def _relations(
        self,
        chunk_id: str,
        counts: dict[str, int],
        first: dict[str, tuple[int, str]],
        span_ids: dict[str, set[int]],
        title_keys: tuple[str, ...],
    ) -> list[Relation]:
        ranked = sorted(counts, key=lambda k: (k not in title_keys, -counts[k], first[k][0], k))
        kept = sorted(ranked[: self.settings.max_entities_per_chunk])
        return [
            Relation(a, b, chunk_id, CO_OCCURS, 1.0)
            for a, b in combinations(kept, 2)  # kept is sorted, so a < b
            if span_ids[a] != span_ids[b]  # two readings of one ambiguous surface
        ]

    # -- optional LLM extraction (kgrag.ingest.llm_extract) -----------------------------------
    def _merge_llm(self, chunk: Chunk, mentioned: set[str], entities: dict[str, _EntityState],
                   mentions: list[Mention], relations: list[Relation]) -> None:
        """The LLM's entities of one chunk join the graph (a known spelling resolves to its
        entity, a new one is typed ``llm:<TYPE>``), with a mention in the chunk and their
        aliases; its relations become ``llm:<RELATION>`` edges evidenced by the chunk."""
        from kgrag.ingest.llm_extract import entity_type, relation_type

        assert self.llm is not None
        found, links = self.llm.read(chunk)
        keys: dict[str, str] = {}
        for entity in found:
            if is_noise_name(entity.name) or not matchable(normalize_alias(entity.name)):
                continue
            key = self._key(entity.name)
            new = key not in entities and key not in self._known
            state = self._note_entity(entities, key, entity.name, None)
            if new:
                state.type = entity_type(entity.type)
                self.gazetteer.add(entity.name, key)
            spellings = {normalize_alias(state.name), *map(normalize_alias, state.aliases)}
            for alias in entity.aliases:
                if normalize_alias(alias) not in spellings and not self.gazetteer.lookup(alias) \
                        and matchable(normalize_alias(alias)):
                    state.aliases.append(alias)
                    spellings.add(normalize_alias(alias))
                    self.gazetteer.add(alias, key)
            if key not in mentioned:
                mentions.append(Mention(key, chunk.id, 1, entity.name))
                mentioned.add(key)
            keys[entity.name] = key
        for link in links:
            a_key, b_key = keys.get(link.source), keys.get(link.target)
            if a_key and b_key and a_key != b_key:
                relations.append(Relation(a_key, b_key, chunk.id, relation_type(link.relation), 1.0))

    # -- terms and structure (kgrag.ingest.terms) -------------------------------------------
    def _key(self, name: str) -> str:
        keys = self.gazetteer.lookup(name)
        return keys[0] if keys else normalize_alias(name)

    def _learn_aliases(self, doc_terms: DocumentTerms) -> list[tuple[str, str]]:
        """An acronym and its long form become one entity before the chunks are resolved.
        Returns the (acronym key, long form key) pairs that were already separate entities:
        they are related ALIAS_OF instead of merged (a merge is the alias admin's call)."""
        separate = []
        for short, long_form in doc_terms.aliases:
            short_keys, long_keys = self.gazetteer.lookup(short), self.gazetteer.lookup(long_form)
            key = (long_keys or short_keys or [normalize_alias(long_form)])[0]
            for form, known in ((long_form, long_keys), (short, short_keys)):
                if not known:
                    self.gazetteer.add(form, key)
                elif key not in known:
                    separate.append((known[0], key))
        return separate

    def _structure(self, doc_terms: DocumentTerms, separate: list[tuple[str, str]], first_chunk: str,
                   entities: dict[str, _EntityState], mentions: list[Mention], relations: list[Relation]) -> None:
        """The first chunk mentions its parent sections; acronyms are aliases of their long
        forms; structural links become typed relations between entities of this document or
        already stored (a link naming no such entity is dropped)."""
        for name, kind in doc_terms.context:
            key = self._key(name)
            if key not in entities:
                self._note_entity(entities, key, name, kind)
                mentions.append(Mention(key, first_chunk, 1, name))
        for pair in doc_terms.aliases:
            state = entities.get(self._key(pair[1]))
            if state is None:
                continue
            for form in pair:
                if normalize_alias(form) not in {normalize_alias(state.name), *map(normalize_alias, state.aliases)}:
                    state.aliases.append(form)
        typed = [(a, b, ALIAS_OF, first_chunk, 3.0) for a, b in separate]
        typed += [(self._key(x.source), self._key(x.target), x.type, x.chunk_id, x.weight)
                  for x in doc_terms.links if x.type != LEADS]
        for a_key, b_key, kind, chunk_id, weight in typed:
            if a_key != b_key and self._stored(a_key, entities) and self._stored(b_key, entities):
                relations.append(Relation(a_key, b_key, chunk_id, kind, weight))
        self._leads([x for x in doc_terms.links if x.type == LEADS], entities, relations)

    def _leads(self, links: Sequence[Link], entities: dict[str, _EntityState], relations: list[Relation]) -> None:
        """A role title LEADS the first of its unit's names (``kgrag.ingest.role_titles``, most
        specific first) that is a stored entity of an organisation's kind, not a person or a
        place ("Head of Remote Darren M" leads no Darren M); a role whose unit no entity names
        yet waits for one (``AwaitedUnits``), so the edge does not depend on document order."""
        units_of: dict[tuple[str, str], list[str]] = {}  # (role key, chunk) → unit keys, best first
        for link in links:
            units_of.setdefault((self._key(link.source), link.chunk_id), []).append(self._key(link.target))
        for (role, chunk_id), units in units_of.items():
            if not self._stored(role, entities):
                continue
            units = [u for u in dict.fromkeys(units) if u != role]
            unit = next((u for u in units if self._unit_like(u, entities)), None)
            if unit is None:
                self._awaited.wait(role, units)
            else:
                self._awaited.led(role)
                relations.append(Relation(role, unit, chunk_id, LEADS, LEADS_WEIGHT))

    def _await_stored_units(self) -> None:
        """Roles of earlier runs whose unit is no entity yet wait for it here too."""
        for alias, keys in list(self.gazetteer.items()):
            units = stored_role_units(alias)
            if units and not any(self.gazetteer.lookup(u) for u in units):
                for key in keys:
                    self._awaited.wait(key, [normalize_alias(u) for u in units])

    def _units_arrived(self, entities: dict[str, _EntityState], mentions: list[Mention],
                       relations: list[Relation]) -> None:
        """This document's new entities that are the unit a role waited for: the role LEADS
        it, evidenced by the chunk that first mentions the unit here. A waiting role is always
        stored: one of an earlier document of this run (``_known``) or of an earlier run."""
        if not self._awaited:
            return  # the usual case (prose has no role titles): no work per document
        first_chunk: dict[str, str] = {}
        for m in mentions:
            first_chunk.setdefault(m.entity_key, m.chunk_id)
        for key in entities:
            if key in self._known or key not in first_chunk or not self._unit_like(key, entities):
                continue
            relations.extend(Relation(role, key, first_chunk[key], LEADS, LEADS_WEIGHT)
                             for role in self._awaited.arrived(key))

    def _unit_like(self, key: str, entities: dict[str, _EntityState]) -> bool:
        state = entities.get(key) or self._known.get(key)
        return state is not None and state.type in _UNIT_TYPES

    def _stored(self, key: str, entities: dict[str, _EntityState]) -> bool:
        """Whether ``key`` is an entity of this document or one already known. Asked of both
        dicts: a union of their key sets per document copies every known key, a cost that grows
        with the knowledge base (docs/decisions.md, "Ingestion: NER over two processes")."""
        return key in entities or key in self._known

    def _learn(self, entities: dict[str, _EntityState]) -> None:
        """New names join the gazetteer so later documents match them."""
        for key, state in entities.items():
            if key in self._known:
                continue
            self._known[key] = state
            if not self.gazetteer.lookup(state.name):
                self.gazetteer.add(state.name, key)


def _holds_name(phrase: str, names: set[str]) -> bool:
    """Whether a normalized phrase holds one of ``names`` (" name ", space-padded) as a proper part."""
    padded = f" {phrase} "
    return any(name in padded and name != padded for name in names)
