"""Questions about a place reached through something else — "Who was the first president of
Damerjog's country?", "When did the country where the village of Clonbrook is located become a
member of CARICOM?", "What is the most popular hotel in Gisvi's city of birth?", "Of what church
is the Diocese of the birthplace of Meehan Bonnar?" — answered without an LLM by making the hop.

The plain extractive answer reads the question's words, and the place it is about is not among
them: it quotes Damerjog's own sentence and, for "first president", whichever president scores
best (Somalia's). Here the place is read first, from the subject's own sentences (``subjects.profile``,
then its whole page): the country by name or demonym ("located in eastern Djibouti", "a Chinese
journalist": ``kgrag.lexicon.countries``), the state or province likewise, the county by its
name ("in Jefferson County, Iowa"), the birthplace from "born … in Windhoek". Then the question
is read again with the place in the phrase's stead ("Who was the first president of Djibouti?",
``best_sentences.choose`` over the sources, the place's own page read whole), and the answer leads
with that, then quotes the sentence naming the place:
``Hassan Gouled Aptidon … was Djibouti's first President … [2]. Damerjog … is a small village
located in eastern Djibouti … [1].``

No hop without a place phrase in the question, the subject's sentences in the sources, and a
place named there; and none when the re-read finds nothing beyond the subject's own sentence: the
usual extractive answer stands. Measured with ``kgrag eval --answers`` (docs/decisions.md,
"Comparisons and hops").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kgrag.generate.citations import source_sentences
from kgrag.generate.extractive.answerer import Extracted, Pick
from kgrag.generate.extractive.asked import Asked
from kgrag.generate.extractive.best_sentences import choose, compose
from kgrag.generate.extractive.subjects import longest_held, norm, pick, profile, title_forms, titled_with
from kgrag.generate.tuning import EXTRACTIVE
from kgrag.generate.types import Source
from kgrag.lexicon.countries import country_mentions, demonym
from kgrag.text.sentences import terms

# "the country where X is located", "the city in which X was born", "the birthplace of X",
# "X's country", "X's city of birth": which place is asked for, and where the subject is written.
_KINDS = {"country": "country", "nation": "country", "state": "state", "province": "state", "county": "county",
          "city": "locality", "town": "locality", "place": "locality", "village": "locality"}
_BEFORE = re.compile(r"\bthe\s+(?P<kind>country|nation|state|province|county)\s+(?:(?:where|in\s+which|that\s+contains|"
                     r"containing|of\s+origin\s+of|of\s+citizenship\s+of|of)\s+)?(?=\S)"
                     r"|\bthe\s+(?P<town>city|town|place|village)\s+(?:where|in\s+which)\s+(?=\S)"
                     r"|\bthe\s+(?:birthplace|place\s+of\s+birth|city\s+of\s+birth|birth\s*place|hometown|home\s+town)\s+of\s+",
                     re.I)
_AFTER = re.compile(r"['’]s?\s+(?:home\s+)?(?:(?P<kind>country|nation|state|province|county)(?:\s+of\s+(?:origin|citizenship))?"
                    r"|(?:birthplace|birth\s*place|place\s+of\s+birth|city\s+of\s+birth|birth\s+city|hometown|home\s+town))(?!\w)",
                    re.I)
# What may follow the subject inside the phrase: "… is located", "… was born", "… is from".
_TAIL = re.compile(r"\s*(?:(?:is|was|are|were)\s+(?:(?:located|found|situated|based|born)(?:\s+in)?|from|in)"
                   r"|(?:is|was|are|were)(?=\s*[,?])|died(?:\s+in)?)\b,?", re.I)
# Where a subject's words end in the phrase: "Black Hawk Township | is located", "X | died".
_SUBJECT_END = re.compile(r"\s+(?:is|was|are|were|has|had|died|lived)\b|[?,;]")
# The clause of the subject's sentences a birthplace or a place of death is read in: "(born 6 March
# 1982 in Windhoek, South-West Africa)", "He died in Topeka, Kansas".
_CLAUSES = {"born": re.compile(r"\bborn\b[^;()]*"), "died": re.compile(r"\bdied\b[^;()]*")}
_LEADING_WORDS = re.compile(r"(?:(?:the|a|an|village|town|city|river|lake|mountain|island|of|film|band|singer|"
                            r"artist|player|footballer|company|school|university|album|song|person)\s+)+", re.I)
_PLACE = r"[A-Z][\w'’.-]*(?:\s+(?:[A-Z][\w'’.-]*|de|del|la|le|upon|on|am|of)(?=\s+[A-Z]|[A-Z]))*(?:\s+[A-Z][\w'’.-]*)?"
_IN_PLACE = re.compile(rf"\b(?:in|near)\s+(?:the\s+(?:city|town|village)\s+of\s+)?({_PLACE})")
_COUNTY = re.compile(r"\b((?:[A-Z][\w'’.-]*\s+)+(?:County|Parish|District|Municipality))\b")


@dataclass(frozen=True)
class PlaceAsked:
    kind: str  # "country", "state", "county" or "locality" (the city or town)
    subject: str
    clause: str | None  # "born", "died": the place of that event; None: where the subject is
    span: tuple[int, int]  # the whole phrase in the question


def answer(q: Asked, sources: Sequence[Source]) -> tuple[str, list[Pick]] | None:
    """The re-read's answer and the sentence naming the place, or None."""
    question = q.question
    asked = place_asked(question, sources)
    if asked is None or not asks_about_the_place(question, asked):
        return None
    found = _place(asked, sources)
    if found is None:
        return None
    place, named_in = found
    reread = question[:asked.span[0]] + place + question[asked.span[1]:]  # "Who was the first president of Djibouti?"
    own = titled_with(place, sources)
    read = [s.whole() if own is not None and s.n == own.n else s for s in sources]
    said = [p for p in choose(q.about(reread, (place,)), read)
            if p.source.n != named_in.source.n and _names(p, place, asked.kind)][:EXTRACTIVE.hop_sentences]
    if not said:
        return None
    picks = [*said, named_in]
    return compose(picks), picks


def asks_about_the_place(question: str, asked: PlaceAsked) -> bool:
    """Whether the question asks something of the place ("the most popular hotel in X's city of
    birth"), not for the place itself ("What is the place of birth of X?": X's page answers it)."""
    return bool(terms(question[:asked.span[0]] + " " + question[asked.span[1]:]))


def _names(said: Pick, place: str, kind: str) -> bool:
    """Whether the sentence (or its source's title) names the place: what it says is about the
    place, not about the words the question shares with some other one ("Hotels in Toronto" for
    the most popular hotel in Windhoek)."""
    where = norm(said.body + " " + (said.source.context.title or ""))
    forms = [place, demonym(place)] if kind == "country" else [place]
    return any(norm(f) in where for f in forms)


def place_asked(question: str, sources: Sequence[Source]) -> PlaceAsked | None:
    """The place phrase, its kind and its subject (a source title written there, else the
    longest words next to it that the sources hold)."""
    texts = [norm(s.text) for s in sources]
    titles = sorted({t for s in sources for t in title_forms(s.context.title or "")}, key=len, reverse=True)
    before = _BEFORE.search(question)
    if before is not None:
        kind = _KINDS[(before.group("kind") or before.group("town") or "city").lower()]
        leading = _LEADING_WORDS.match(question, before.end())  # "the village of" Clonbrook
        subject = _written(question, leading.end() if leading else before.end(), titles, texts)
        if subject is not None:
            tail = _TAIL.match(question, subject[1])
            end = tail.end() if tail else subject[1]
            said = tail.group(0).lower() if tail else ""
            clause = "born" if before.group("kind") is None and before.group("town") is None else (
                "born" if "born" in said else "died" if "died" in said else None)
            return PlaceAsked(kind, question[subject[0]:subject[1]], clause, (before.start(), end))
    after = _AFTER.search(question)
    if after is not None:
        kind = "locality" if after.group("kind") is None else _KINDS[after.group("kind").lower()]
        head = question[:after.start()]
        title = next((t for t in titles if re.search(r"(?<!\w)" + re.escape(t) + r"$", head, re.I)), None)
        held = ((head[len(head) - len(title):], (len(head) - len(title), len(head))) if title
                else longest_held(head, texts, from_end=True, offset=0))
        if held is not None:
            return PlaceAsked(kind, held[0], "born" if after.group("kind") is None else None, (held[1][0], after.end()))
    return None


def _written(question: str, start: int, titles: list[str], texts: list[str]) -> tuple[int, int] | None:
    after = question[start:]
    title = next((t for t in titles if re.match(re.escape(t) + r"(?!\w)", after, re.I)), None)
    if title is not None:
        return start, start + len(title)
    cut = _SUBJECT_END.search(after)  # "Black Hawk Township is located": the sources hold the verb too
    held = longest_held(after[:cut.start()] if cut else after, texts, from_end=False, offset=start)
    return held[1] if held else None


def _place(asked: PlaceAsked, sources: Sequence[Source]) -> tuple[str, Pick] | None:
    """The place the subject's sentences name for the kind asked and the sentence naming it: its
    defining sentences first, then its whole page."""
    said = profile(asked.subject, sources)
    read = list(said)
    for source in {s.n: s for s, _ in said}.values():
        whole = source.whole()
        read += [(whole, sentence) for sentence in source_sentences(whole)]
    find = _FINDERS[asked.kind]
    for source, sentence in read:
        text = sentence.text
        if asked.clause is not None:
            clause = _CLAUSES[asked.clause].search(text)
            if clause is None:
                continue
            text = clause.group(0)
        place = find(text)
        if place:
            return place, pick(source, sentence)
    return None


def _country(text: str) -> str | None:
    direct = [m for m in country_mentions(text) if not m.province]
    return direct[0].country if direct else None


def _state(text: str) -> str | None:
    provinces = [m for m in country_mentions(text) if m.province]
    return provinces[0].surface if provinces else None


def _county(text: str) -> str | None:
    m = _COUNTY.search(text)
    return m.group(1).strip() if m else None


def _locality(text: str) -> str | None:
    m = _IN_PLACE.search(text)
    return m.group(1).rstrip(".") if m else None


_FINDERS: dict[str, Callable[[str], str | None]] = {
    "country": _country, "state": _state, "county": _county, "locality": _locality}


class PlaceHop:
    """"Who was the first president of Damerjog's country?": the place read first, then the
    question again about it."""

    name = "place_hop"

    def answer(self, asked: Asked, sources: Sequence[Source]) -> Extracted | None:
        found = answer(asked, sources)
        return None if found is None else Extracted(*found)
