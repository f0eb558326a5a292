"""Yes/no questions about two subjects' countries, answered from the sources without an LLM:
"Were Scott Derrickson and Ed Wood of the same nationality?", "Are both Jim McBride and Neil
Jordan American?", "Are A and B located in different countries?", "Do both films A and B have
directors from the same country?".

Quoting the two subjects' sentences, as the extractive answer otherwise does, leaves the
comparison to the reader and never says "yes" or "no". Here each subject is found in the
question (a source's title written there, else the longest words around "and" that the sources
hold), its defining sentences are read (the first sentences of the source titled with it, else
the first sentence naming it), and the first country they name after the subject's own name
(``kgrag.lexicon.countries``) is its country. For "the directors of films A and B" the hop is
made first: "directed by X" in A's sentences, then X's own sentences. The answer says the verdict
with the words it rests on, each cited, then quotes those sentences:
``No — Caracu River: Brazil [2]; South Fork Rogue River: U.S. [1]. The Caracu River is ...``.

A verdict needs its evidence: "yes" needs both countries; "no" needs both for "the same
country", one that differs for "both American". Without it there is no verdict (None) and the
usual extractive answer stands. Measured with ``kgrag eval --answers`` (docs/decisions.md,
"Comparisons and hops"): how many verdicts are given, and how many are wrong.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kgrag.generate.extractive.answerer import Extracted, Pick
from kgrag.generate.extractive.asked import Asked
from kgrag.generate.extractive.best_sentences import compose
from kgrag.generate.extractive.subjects import (
    RELATION,
    bare,
    bracketed,
    in_reading_order,
    led_to,
    pick,
    profile,
    subjects_around,
    unique,
)
from kgrag.generate.types import Source
from kgrag.lexicon.countries import country_mentions, first_country
from kgrag.text.sentences import plain, terms

_AUX = re.compile(r"^\s*(?:are|is|were|was|do|does|did|have|has|had)\s+", re.I)
_SAME = re.compile(r"\bsame\s+(?:country|nationality|citizenship)\b|\bcommon\s+(?:country|nationality)\b", re.I)
_DIFFERENT = re.compile(r"\bdifferent\s+(?:countries|nationalities)\b", re.I)
_BOTH = re.compile(r"\bboth\b", re.I)
_JOINS = (" and ", " as ")  # "A and B", "A have the same nationality as B"
# Between two demonyms of one nationality phrase: "Russian American", "American- Canadian",
# "Italian/ French", "British–American".
_JOINED = re.compile(r"\s*(?:[-–—/]\s*|\s+and\s+)?|\s+")
# "both of Armenian descent" asks about ancestry, and "of Armenian descent" says it: no nationality.
_ANCESTRY = re.compile(r"\s*\b(?:descent|origin|heritage|ancestry|roots|extraction)\b", re.I)
_GENERIC = terms("type types kind kinds sort sorts form forms example examples")  # "both types of shrub"


@dataclass(frozen=True)
class PolarAsked:
    subjects: tuple[str, str]  # as written in the question
    relation: str | None  # "director": compare the subjects' directors
    target: str | None  # "both American?": the country both must have
    different: bool  # "in different countries?": yes means they differ
    category: str | None = None  # "both novelists?": what both must be said to be (yes only)


@dataclass(frozen=True)
class _Nationality:
    """The countries one phrase names: "Russian American", "British–American-Japanese"."""

    countries: frozenset[str]
    surface: str


@dataclass(frozen=True)
class _Found:
    name: str  # the subject, or the person the relation led to
    country: _Nationality
    evidence: list[Pick]  # the sentence naming the country (and the one naming the person)


def answer(question: str, sources: Sequence[Source]) -> tuple[str, list[Pick]] | None:
    """The verdict and the sentences it rests on, or None when the question is no yes/no
    question about countries or the sources do not settle it."""
    asked = polar_asked(question, sources)
    if asked is None:
        return None
    if asked.category is not None:
        return _both_are(asked.subjects, asked.category, sources)
    found = [_country_of(s, asked.relation, sources) for s in asked.subjects]
    verdict = _verdict(asked, found)
    if verdict is None:
        return None
    yes, shown = verdict
    picks = in_reading_order([p for f in shown for p in f.evidence])
    said = "; ".join(f"{f.name}: {f.country.surface} {_markers(f)}" for f in shown)
    return f"{'Yes' if yes else 'No'} — {said}. {compose(picks)}", picks


def _both_are(subjects: tuple[str, str], category: str, sources: Sequence[Source]) -> tuple[str, list[Pick]] | None:
    """"Yes" when each subject's defining sentences hold every word of the category (stemmed:
    "novelists" / "novelist"); no verdict otherwise: a sentence not saying "novelist" does not
    say the subject is none."""
    wanted = terms(category) - _GENERIC
    evidence: list[tuple[str, Pick]] = []
    for subject in subjects:
        said = profile(subject, sources)
        held = set().union(*(terms(plain(sentence.text)) for _, sentence in said)) if said else set()
        if not wanted <= held:
            return None
        source, sentence = max(said, key=lambda p: len(terms(plain(p[1].text)) & wanted))
        evidence.append((bare(subject), pick(source, sentence)))
    named = "; ".join(f"{name} [{p.source.n}]" for name, p in evidence)
    picks = in_reading_order([p for _, p in evidence])
    return f"Yes — both {category}: {named}. {compose(picks)}", picks


def polar_asked(question: str, sources: Sequence[Source]) -> PolarAsked | None:
    """What a yes/no question about two subjects' countries asks; None for any other question."""
    aux = _AUX.match(question)
    if aux is None or re.search(r"\bor\b", question, re.I):  # "Is A or B older?" asks which
        return None
    body = question[aux.end():].strip().rstrip("?").strip()
    subjects = subjects_around(body, sources, _JOINS)
    if subjects is None:
        return None
    (a, a_span), (b, b_span) = subjects
    rest = body[:a_span[0]] + " " + body[a_span[1]:b_span[0]] + " " + body[b_span[1]:]
    relation = RELATION.search(rest)
    same, different = _SAME.search(rest) is not None, _DIFFERENT.search(rest) is not None
    target = None if same or different or _ANCESTRY.search(rest) else _target(rest)
    category = None if same or different or target else _category(rest)
    if category is not None and relation is not None:
        if relation.start() < rest.index(category):
            return None  # "the directors of A and B both novelists?": the hop is made for countries only
        relation = None  # "both opera composers": the noun is what both are
    if not (same or different or target or category):
        return None
    return PolarAsked((a, b), relation.group(1).lower() if relation else None, target, different, category)


def _category(rest: str) -> str | None:
    """"both novelists" / "both breeds of dog": the words after "both" that say what each is."""
    both = _BOTH.search(rest)
    if both is None:
        return None
    phrase = re.sub(r"^\s*(?:and\s+)?", "", rest[both.end():]).strip(" ,")
    return phrase if terms(phrase) - _GENERIC else None


def _target(rest: str) -> str | None:
    """"both American(s)" / "both from Germany": the country named after "both"."""
    both = _BOTH.search(rest)
    if both is None:
        return None
    tail = rest[both.end():]
    mention = first_country(tail) or first_country(re.sub(r"\b([A-Z]\w+)s\b", r"\1", tail))
    return mention.country if mention else None


def _country_of(subject: str, relation: str | None, sources: Sequence[Source]) -> _Found | None:
    said = profile(subject, sources)
    if relation is not None:
        led = led_to(said, relation)
        if led is None:
            return None
        person, named_in = led
        found = _country_of(person, None, sources)
        return None if found is None else _Found(person, found.country, unique([named_in, *found.evidence]))
    for source, sentence in said:
        mention = _country_after(subject, sentence.text)
        if mention is not None:
            return _Found(bare(subject), mention, [pick(source, sentence)])
    return None


def _country_after(name: str, sentence: str) -> _Nationality | None:
    """The countries of the first phrase naming some after ``name`` (where the sentence names
    it: a country in the name itself, "Republic of Ireland national team", is no answer), outside
    parentheses (a birthplace: "(born Ann Arbor, Michigan, U.S., ...) is an American composer")
    unless only they name one. A province counts where it comes first ("Governor of South
    Dakota ... ambassador to Singapore")."""
    at = re.search(re.escape(bare(name)), sentence, re.I)
    tail_from = at.end() if at else 0
    mentions = [m for m in country_mentions(sentence)
                if m.start >= tail_from and not _ANCESTRY.match(sentence, m.end)]
    brackets = bracketed(sentence)  # (an ancestry, "of Armenian descent", is none either)
    outside = [m for m in mentions if not any(a <= m.start < b for a, b in brackets)]
    chosen = outside or mentions
    if not chosen:
        return None
    phrase = [chosen[0]]
    for m in chosen[1:]:
        gap = sentence[phrase[-1].end:m.start]
        if not (_JOINED.fullmatch(gap) or (re.fullmatch(r"\s*,\s*", gap) and m.country == phrase[-1].country)):
            break  # "Michigan, U.S." is one place; "Brazil, Argentina" would be two
        phrase.append(m)
    return _Nationality(frozenset(m.country for m in phrase), sentence[phrase[0].start:phrase[-1].end])


def _verdict(asked: PolarAsked, found: list[_Found | None]) -> tuple[bool, list[_Found]] | None:
    known = [f for f in found if f is not None]
    if asked.target is not None:
        differing = [f for f in known if asked.target not in f.country.countries]
        if differing:
            return False, differing
        return (True, known) if len(known) == 2 else None
    if len(known) < 2:
        return None
    same = bool(known[0].country.countries & known[1].country.countries)  # one shared is the same
    return same != asked.different, known


def _markers(found: _Found) -> str:
    return f"[{found.evidence[-1].source.n}]"




class YesNo:
    """"Were A and B of the same nationality?": each subject's country read, the verdict said."""

    name = "yes_no"

    def answer(self, asked: Asked, sources: Sequence[Source]) -> Extracted | None:
        found = answer(asked.question, sources)
        return None if found is None else Extracted(*found)
