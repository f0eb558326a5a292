"""Candidate duplicate entities, for a person to confirm with ``kgrag aliases merge``; nothing
here changes the graph.

Signals, each a reason shown with the pair:
* ``shared_alias``: one normalized alias claimed by both (an ambiguity to resolve either way);
* ``spacing``: names equal once spaces are removed ("iPhone15Pro" / "iPhone 15 Pro");
* ``acronym``: one is the initials of the other ("LCA" / "Lowest Common Ancestor");
* ``fuzzy``: rapidfuzz ratio of the normalized names at or above ``fuzzy_threshold``;
* ``embedding``: cosine of the names' embeddings (the shipped embedder) at or above
  ``embedding_threshold``, for names in Latin script only: the shipped MiniLM is English, and
  maps unrelated Chinese names alike (哥哥 / 崇拜 scored 1.0);
* ``parenthesised_alias``: one name is the other's plus a parenthesised alias of it
  ("Lowest Common Ancestor (LCA)" / "Lowest Common Ancestor", ``kgrag.lexicon.entity_rules``);
  the qualifier is then the alias, not a different subject, so ``qualifiers_differ`` is not set;
* ``neighbours``: Jaccard overlap of their graph neighbours, with at least ``min_shared``
  shared (weak alone: two films of one director share neighbours too).
Only the ``max_entities`` most mentioned entities (and every curated one) are compared
pairwise; shared aliases are found over the whole graph.

A name and its truncation ("base_url" / "base_ur": one cut off inside a word, ``is_truncation``)
are never suggested: the shorter is a broken extraction, not another name of the same thing.

Names that differ in a parenthesized qualifier ("Inside Job (2010 film)" / "Inside Job (TV
series)", "Dick Smith" / "Dick Smith (retailer)") are distinct by construction in
Wikipedia-style corpora, yet share their base name and look alike: such pairs are kept (a
glossary may still hold "Python (language)" / "Python (programming language)") but scored at
``QUALIFIED_FACTOR`` and marked ``qualifiers_differ``. Likewise names whose numbers differ
("Spider-Man 2" / "Spider-Man 3", "Alexander II" / "Alexander III"): ``numbers_differ``.
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from kgrag.lexicon.entity_rules import parenthesised_alias_keys
from kgrag.models.base import Embedder
from kgrag.stores.base import AliasGraph
from kgrag.text.normalize import normalize_alias
from kgrag.types import Entity

WEIGHTS = {"shared_alias": 1.0, "spacing": 1.0, "acronym": 0.8, "fuzzy": 1.0, "embedding": 1.0, "neighbours": 0.5,
           "parenthesised_alias": 2.0}
QUALIFIED_FACTOR = 0.25
_LATIN_WORD = re.compile(r"^[a-z][a-z0-9]*$")
_QUALIFIER = re.compile(r"\s*[(（]([^()（）]*)[)）]\s*$")


_DIGITS = re.compile(r"\d+")
_ROMAN = re.compile(r"^[ivxlc]{1,5}$")


def numbers(name: str) -> tuple[list[str], list[str]]:
    """Digit runs (spacing ignored: "A-10" == "A10") and Roman-numeral words of a name."""
    normalized = normalize_alias(name)
    return _DIGITS.findall(normalized.replace(" ", "")), [w for w in normalized.split() if _ROMAN.match(w)]


def qualifier(name: str) -> str:
    """The trailing parenthesized qualifier of a name ("2010 film"), "" when none."""
    m = _QUALIFIER.search(name)
    return normalize_alias(m.group(1)) if m else ""


@dataclass
class Suggestion:
    keep: Entity
    drop: Entity
    reasons: dict[str, Any] = field(default_factory=dict)
    score: float = 0.0

    def command(self) -> str:
        return f"kgrag aliases merge {shlex.quote(self.keep.key)} {shlex.quote(self.drop.key)}"

    def to_dict(self) -> dict[str, Any]:
        return {"keep": {"key": self.keep.key, "name": self.keep.name},
                "drop": {"key": self.drop.key, "name": self.drop.name},
                "score": round(self.score, 3), "reasons": self.reasons, "command": self.command()}


def suggest_duplicates(
    graph: AliasGraph,
    *,
    embedder: Embedder | None = None,
    limit: int = 50,
    max_entities: int = 2000,
    fuzzy_threshold: float = 90.0,
    embedding_threshold: float = 0.85,
    min_shared: int = 2,
    min_jaccard: float = 0.5,
) -> list[Suggestion]:
    entities = {e.key: e for e in graph.alias_admin.list_entities()}
    counts = graph.entity_chunk_counts(list(entities))
    ranked = sorted(entities.values(), key=lambda e: (not e.curated, -counts.get(e.key, 0), e.key))
    pool = ranked[:max_entities]
    reasons: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)

    def note(a: str, b: str, reason: str, value: Any) -> None:
        if a != b:
            reasons[(a, b) if a < b else (b, a)].setdefault(reason, value)

    table = graph.alias_table()
    for alias, keys in table.items():
        for a, b in combinations(sorted(keys), 2):
            note(a, b, "shared_alias", alias)
    compact: dict[str, set[str]] = defaultdict(set)
    for alias, keys in table.items():
        if " " in alias:
            compact[alias.replace(" ", "")].update(keys)
    for alias, keys in table.items():
        if alias in compact:
            for a in keys:
                for b in compact[alias]:
                    note(a, b, "spacing", alias)
    _parenthesised_aliases(pool, table, note)
    _acronyms(pool, note)
    _fuzzy(pool, fuzzy_threshold, note)
    if embedder is not None and len(pool) > 1:
        _embedding(pool, embedder, embedding_threshold, note)
    _neighbours(graph, pool, min_shared, min_jaccard, note)

    out = []
    for (a, b), why in reasons.items():
        if a not in entities or b not in entities:
            continue
        ea, eb = entities[a], entities[b]
        if is_truncation(ea.name, eb.name):
            continue
        # Keep the curated one, else the more mentioned, else the fuller name.
        keep, drop = sorted((ea, eb), key=lambda e: (not e.curated, -counts.get(e.key, 0), -len(e.key), e.key))
        if "parenthesised_alias" in why and not keep.curated:  # the base name is what "X (alias)" spells out
            keep, drop = sorted((ea, eb), key=lambda e: e.name == why["parenthesised_alias"])
        score = sum(WEIGHTS[r] * (v if isinstance(v, float) else 1.0) for r, v in why.items())
        same_subject = "parenthesised_alias" in why
        for reason, differs in (("qualifiers_differ", qualifier(ea.name) != qualifier(eb.name) and not same_subject),
                                ("numbers_differ", numbers(ea.name) != numbers(eb.name))):
            if differs:
                why[reason] = True
                score *= QUALIFIED_FACTOR
        out.append(Suggestion(keep, drop, dict(sorted(why.items())), score))
    out.sort(key=lambda s: (-s.score, s.keep.key, s.drop.key))
    return out[:limit]


# Endings by which one word form follows from another: "user" / "users" is an inflection, not a cut.
_INFLECTIONS = ("s", "es", "'s", "’s")


def is_truncation(a: str, b: str) -> bool:
    """Whether one name is the other cut off inside a word ("base_ur" / "base_url", "Lomonoso" /
    "Lomonosov"): a broken extraction, never a second name of the same thing. A whole word more
    ("Spider-Man" / "Spider-Man 2") or an inflection ("user" / "users") is no cut."""
    short, long_ = sorted((normalize_alias(a), normalize_alias(b)), key=len)
    if not short or short == long_ or not long_.startswith(short):
        return False
    tail = long_[len(short):]
    return short[-1].isalnum() and tail[0].isalnum() and tail not in _INFLECTIONS


def is_latin_name(name: str) -> bool:
    """Whether a name's letters are all Latin: the only script the shipped embedder reads."""
    letters = [ch for ch in name if ch.isalpha()]
    return bool(letters) and all(ch.isascii() or "LATIN" in unicodedata.name(ch, "") for ch in letters)


def _names(entity: Entity) -> list[str]:
    return list(dict.fromkeys(n for a in entity.aliases if (n := normalize_alias(a))))


def _parenthesised_aliases(pool: Sequence[Entity], table: dict[str, list[str]], note) -> None:
    def lookup(name: str) -> list[str]:
        return table.get(normalize_alias(name), [])

    for e in pool:
        for other in parenthesised_alias_keys(e.name, lookup):
            note(e.key, other, "parenthesised_alias", e.name)


def _acronyms(pool: Sequence[Entity], note) -> None:
    by_initials: dict[str, set[str]] = defaultdict(set)
    for e in pool:
        for name in _names(e):
            words = name.split()
            if len(words) >= 2 and all(_LATIN_WORD.match(w) for w in words):
                by_initials["".join(w[0] for w in words)].add(e.key)
    for e in pool:
        for name in _names(e):
            if " " not in name and len(name) >= 2:
                for other in by_initials.get(name, ()):
                    note(e.key, other, "acronym", name)


def _fuzzy(pool: Sequence[Entity], threshold: float, note) -> None:
    if len(pool) < 2:
        return
    from rapidfuzz import fuzz, process

    names = [normalize_alias(e.name) or e.key for e in pool]
    scores = process.cdist(names, names, scorer=fuzz.ratio, score_cutoff=threshold, dtype=np.float32)
    for i, j in zip(*np.nonzero(np.triu(scores, k=1))):
        note(pool[i].key, pool[j].key, "fuzzy", round(float(scores[i, j]) / 100.0, 3))


def _embedding(pool: Sequence[Entity], embedder: Embedder, threshold: float, note) -> None:
    pool = [e for e in pool if is_latin_name(e.name)]
    if len(pool) < 2:
        return
    vectors = np.asarray(embedder.embed_queries([e.name for e in pool]), dtype=np.float32)
    similarity = np.triu(vectors @ vectors.T, k=1)
    for i, j in zip(*np.nonzero(similarity >= threshold)):
        note(pool[i].key, pool[j].key, "embedding", round(float(similarity[i, j]), 3))


def _neighbours(graph: AliasGraph, pool: Sequence[Entity], min_shared: int, min_jaccard: float, note) -> None:
    around: dict[str, set[str]] = {}
    by_neighbour: dict[str, set[str]] = defaultdict(set)
    for e in pool:
        around[e.key] = set(graph.neighbors([e.key], hops=1, limit=100)) - {e.key}
        for n in around[e.key]:
            by_neighbour[n].add(e.key)
    shared: dict[tuple[str, str], int] = defaultdict(int)
    for members in by_neighbour.values():
        if len(members) <= 200:  # a hub every entity touches says nothing about any pair
            for a, b in combinations(sorted(members), 2):
                shared[(a, b)] += 1
    for (a, b), common in shared.items():
        union = len(around[a] | around[b])
        if common >= min_shared and union and common / union >= min_jaccard:
            note(a, b, "neighbours", round(common / union, 3))
