"""Entities a question describes instead of naming: graph seeds matched by words, not spans.

A question about a team's own documents rarely writes a heading or a term as it stands: "which
prefix is used for temporary *channels* focused on a specific *project*" means the section
"Project Channels (proj_)", "the *executive* who leads the division" the section "Executives",
"the *calendar* all *team* members subscribe to for company-wide *meetings*" the section "GitLab
Team Meetings calendar". The exact linker (``kgrag.retrieve.linking``) needs the words in a
row and in the order of a name, so such questions link nothing or only a generic term
("Slack channel", "team member").

Here each name of an entity the term extractor made (``ANY_CASE_TYPES``: headings, defined
terms, noun-phrase terms, identifiers, table entries; never an NER entity, so encyclopedic
knowledge bases are untouched) is a bag of BM25 terms (``kgrag.text.analyze``: stemmed English,
jieba-segmented Chinese). A name is *described* when the question holds its terms — the share
``LINKING.described_min_coverage`` of their IDF weight among all names, by default every one. The
``LINKING.max_described`` best by the IDF mass they match (a rare word such as "fiscal" or "proj" carries
a name, "team" or "channel" little) become graph seeds at ``LINKING.described_confidence`` × coverage,
half an exactly linked entity's 1.0.

They only seed the graph walk: the answer gate, follow-up detection, the iteration driver's
stop rule and the keyword expansion keep reading the exactly linked entities (a question that
describes "Categories" is still a follow-up when it names nothing).

The runs that chose the setting and these numbers are in docs/decisions.md, "Described
entities".

The index holds only the term extractor's entities (``GraphReader.alias_table(types)``): at
100k passages 13.6k of 170k aliases, read in 0.15 s and analysed in ~1 s at the first question
(the whole table took 8.7 s); it is re-read every ``INDEX_TTL_S`` in the background and analysed
again only when it changed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from kgrag.retrieve.background_cache import Refreshed, unless_unchanged
from kgrag.retrieve.tuning import LINKING
from kgrag.retrieve.types import LinkedEntity
from kgrag.stores.base import GraphReader
from kgrag.text.analyze import analyze
from kgrag.types import ANY_CASE_TYPES, Entity

INDEX_TTL_S = 60.0


@dataclass(frozen=True)
class _Names:
    """Every alias as a bag of terms, with an inverted index and each term's IDF over aliases."""

    terms: dict[str, tuple[frozenset[str], list[str]]]  # alias → (its terms, entity keys)
    by_term: dict[str, list[str]]  # term → aliases holding it
    idf: dict[str, float]
    table: dict[str, list[str]]  # what it was built from
    entities: dict[str, Entity | None] = field(default_factory=dict, compare=False)  # read once per key

    @classmethod
    def build(cls, table: dict[str, list[str]]) -> _Names:
        terms: dict[str, tuple[frozenset[str], list[str]]] = {}
        by_term: dict[str, list[str]] = {}
        for alias, keys in table.items():
            words = frozenset(analyze(alias))
            if not words:
                continue
            terms[alias] = (words, list(keys))
            for word in words:
                by_term.setdefault(word, []).append(alias)
        n = max(1, len(terms))
        idf = {word: math.log(1.0 + n / len(aliases)) for word, aliases in by_term.items()}
        return cls(terms, by_term, idf, table)

    @classmethod
    def read(cls, graph: GraphReader, previous: _Names | None) -> _Names:
        """The term extractor's aliases, analysed again only when they changed since
        ``previous`` (at 100k passages 13.6k aliases: read in 0.15 s, analysed in ~1 s)."""
        return unless_unchanged(graph.alias_table(ANY_CASE_TYPES), previous, cls.build)


class DescriptionLinker:
    """``link(question, linked)`` → the structural entities the question describes (method
    ``"words"``), best first, none of ``linked``. The alias index is rebuilt in the background
    every ``INDEX_TTL_S`` seconds, at once after ``invalidate()``; entities are read once per key
    and index."""

    def __init__(self, graph: GraphReader, ttl_s: float = INDEX_TTL_S):
        self.graph = graph
        self._names: Refreshed[_Names] = Refreshed(lambda previous: _Names.read(graph, previous), ttl_s,
                                                   "kgrag-described-index")

    def invalidate(self) -> None:
        self._names.invalidate()

    def link(self, question: str, linked: Sequence[LinkedEntity] = ()) -> list[LinkedEntity]:
        asked = set(analyze(question))
        if not asked:
            return []
        names = self._names.get()
        taken = {le.key for le in linked}
        scored: dict[str, tuple[float, float, str]] = {}  # key → (rank score, coverage, alias)
        # Sorted and summed exactly: the same question links the same alias in every process
        # (a set's order, which string hashing randomises, must not break ties).
        for alias in sorted({a for word in asked for a in names.by_term.get(word, ())}):
            words, keys = names.terms[alias]
            total = math.fsum(names.idf[w] for w in words)
            held = math.fsum(names.idf[w] for w in words if w in asked)
            coverage = held / total
            if coverage < LINKING.described_min_coverage - 1e-9:
                continue
            for key in keys:
                if key not in taken and held * coverage > scored.get(key, (0.0,))[0]:
                    scored[key] = (held * coverage, coverage, alias)
        out: list[LinkedEntity] = []
        ranked = sorted(scored.items(), key=lambda kv: (-kv[1][0], kv[0]))
        for key, (_, coverage, alias) in ranked[:LINKING.max_type_reads]:
            if len(out) >= LINKING.max_described:
                break
            entity = _entity(self.graph, names, key)
            if entity is None or entity.type not in ANY_CASE_TYPES:
                continue
            out.append(LinkedEntity(surface=alias, key=key, name=entity.name, method="words",
                                    score=round(LINKING.described_confidence * coverage, 3)))
        return out


def _entity(graph: GraphReader, names: _Names, key: str) -> Entity | None:
    if key not in names.entities:
        names.entities[key] = graph.get_entity(key)
    return names.entities[key]
