"""Questions about someone reached through a relation of something else — "Where was the director
of film He's a Cockeyed Wonder born?", "Which award did the composer of Howrah Bridge earn?",
"When did Les Films du Losange's founder die?", "What is the date of death of Philibert I's
mother?" — answered without an LLM by making the hop the question describes.

The extractive answer's bridge follows a title that a picked sentence names; with several
directors' pages among the sources it may read the wrong one (Richard Thorpe's birth for Peter
Godfrey's film). Here the hop is read: the subject's sentence naming the person ("directed by
Peter Godfrey", ``subjects.led_to``), then that person's own page, read for the rest of the
question with the person's name in place of the phrase ("Where was Peter Godfrey born?",
``best_sentences.choose`` over that page alone). The answer leads with what the person's page says,
then quotes the sentence naming the person:
``Peter Godfrey (16 October 1899 – 4 March 1970) was an English film director … born in London [2].
He's a Cockeyed Wonder is a 1950 American comedy film directed by Peter Godfrey … [1].``

When what the question asks of the person is a place of theirs ("the city where the performers
of Brother were formed"), the place is a further hop (``located``); the person's own page says
where that is, not what is there, so without that hop the usual extractive answer stands.

No hop without the subject's sentence naming the person and the person's own page (titled with
the name, or sentences where the name is the subject): the usual extractive answer stands.
Measured with ``kgrag eval --answers`` (docs/decisions.md, "Comparisons and hops").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgrag.generate.citations import source_sentences
from kgrag.generate.extractive import place_hop as located
from kgrag.generate.extractive.answerer import Extracted, Pick
from kgrag.generate.extractive.asked import Asked
from kgrag.generate.extractive.best_sentences import choose, compose
from kgrag.generate.extractive.subjects import (
    KIN_WORDS,
    RELATIONS,
    led_to,
    longest_held,
    norm,
    profile,
    title_forms,
    titled_with,
)
from kgrag.generate.tuning import EXTRACTIVE
from kgrag.generate.types import Source

# Relatives two hops away: the first relative's page names the second ("X's paternal
# grandfather": X's page names the father, the father's page his father).
_CHAINS = {"paternal grandfather": ("father", "father"), "paternal grandmother": ("father", "mother"),
           "maternal grandfather": ("mother", "father"), "maternal grandmother": ("mother", "mother"),
           "father-in-law": ("spouse", "father"), "mother-in-law": ("spouse", "mother")}
_RELATION_WORDS = "|".join(re.escape(w) for w in sorted([*_CHAINS, *RELATIONS, *KIN_WORDS], key=len, reverse=True))
# "the director of (the) (film) X", "X's director"; the kind of work named before X is no part of it.
_OF = re.compile(rf"\bthe\s+(?P<relation>{_RELATION_WORDS})s?(?![\w-])\s+of\s+(?:the\s+)?"
                 r"(?:(?:film|movie|song|album|band|company|book|novel|play|opera|magazine|series|show|work)\s+)?", re.I)
_POSSESSIVE = re.compile(rf"['’]s?\s+(?P<relation>{_RELATION_WORDS})(?![\w-])", re.I)  # "father", not "father-in-law"
_WHO = re.compile(r"^\s*(?:who|whom)\b", re.I)


def answer(q: Asked, sources: Sequence[Source]) -> tuple[str, list[Pick]] | None:
    """The person's page's answer and the sentences naming the person, or None."""
    question = q.question
    found = _relayed(question, sources)
    if found is None:
        return None
    relation, subject, span = found
    walked = _walk(subject, _CHAINS.get(relation, (relation,)), sources)
    if walked is None:
        return None
    person, named_in = walked
    asked = question[:span[0]] + person + question[span[1]:]  # "Where was Peter Godfrey born?"
    placed = located.answer(q.about(asked), sources)  # "the city where Peter Godfrey died": the place is a hop further
    if placed is not None:
        picks = [*placed[1], *reversed(named_in)]
        return compose(picks), picks
    place = located.place_asked(asked, sources)
    if place is not None and located.asks_about_the_place(asked, place):
        return None  # the person's own page says where they were born, not what is there
    page = _page_of(person, sources)
    said: list[Pick] = []
    if page is not None:
        page = page.whole()  # the answer is often past the prompt's window ("He was born in London")
        said = [p for p in choose(q.about(asked, (person,)), [page])
                if not any(_same(p, n) for n in named_in)][:EXTRACTIVE.hop_sentences]
    if not said and not (len(named_in) > 1 and _WHO.match(question)):
        return None  # a grandparent's name is the answer to "who"; anything else needs their page
    picks = [*said, *reversed(named_in)]
    return compose(picks), picks


def _walk(subject: str, steps: tuple[str, ...], sources: Sequence[Source]) -> tuple[str, list[Pick]] | None:
    """The person ``steps`` lead to from ``subject`` and the sentence naming each one on the way."""
    said, named_in, person = profile(subject, sources), [], subject
    for i, step in enumerate(steps):
        hop = led_to(said, step)
        if hop is None:
            return None
        person, sentence = hop
        named_in.append(sentence)
        if i + 1 < len(steps):
            page = _page_of(person, sources)
            if page is None:
                return None
            said = [(page, s) for _, s in profile(person, [page])] or [(page, s) for s in source_sentences(page)[:1]]
    return person, named_in


def _relayed(question: str, sources: Sequence[Source]) -> tuple[str, str, tuple[int, int]] | None:
    """The relation, the subject (as written) and the span of the whole phrase ("the director of
    film X", "X's director") in ``question``: a source title written there, else the longest
    words next to the relation that the sources hold."""
    texts = [norm(s.text) for s in sources]
    titles = sorted({t for s in sources for t in title_forms(s.context.title or "")}, key=len, reverse=True)
    of = _OF.search(question)
    if of is not None:
        after = question[of.end():]
        title = next((t for t in titles if re.match(re.escape(t) + r"(?!\w)", after, re.I)), None)
        subject = ((after[:len(title)], (of.end(), of.end() + len(title))) if title
                   else longest_held(after, texts, from_end=False, offset=of.end()))
        if subject is not None:
            return of.group("relation").lower(), subject[0], (of.start(), subject[1][1])
    possessive = _POSSESSIVE.search(question)
    if possessive is not None:
        before = question[:possessive.start()]
        title = next((t for t in titles if re.search(r"(?<!\w)" + re.escape(t) + r"$", before, re.I)), None)
        subject = ((before[len(before) - len(title):], (len(before) - len(title), len(before))) if title
                   else longest_held(before, texts, from_end=True, offset=0))
        if subject is not None:
            return possessive.group("relation").lower(), subject[0], (subject[1][0], possessive.end())
    return None


def _page_of(person: str, sources: Sequence[Source]) -> Source | None:
    """The person's own page: the source titled with the name, else the one holding the first
    sentence where the name is the subject."""
    own = titled_with(person, sources)
    if own is not None:
        return own
    said = profile(person, sources)
    return said[0][0] if said else None


def _same(a: Pick, b: Pick) -> bool:
    return a.source.n == b.source.n and a.sentence.start == b.sentence.start


class RelationHop:
    """"Where was the director of film X born?": the person the relation leads to, then their
    own page read for the rest of the question."""

    name = "relation_hop"

    def answer(self, asked: Asked, sources: Sequence[Source]) -> Extracted | None:
        found = answer(asked, sources)
        return None if found is None else Extracted(*found)
