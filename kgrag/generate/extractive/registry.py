"""The extractive answerers, asked in this order; the first that answers stands.

A new kind of question is one module with an ``Answerer`` (``answerer.py``) and one line here,
placed before the answerers whose questions it must take first. ``best_sentences`` answers any
question and stays last.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgrag.generate.extractive.answerer import Answerer, Extracted
from kgrag.generate.extractive.asked import Asked
from kgrag.generate.extractive.best_sentences import BestSentences
from kgrag.generate.extractive.dates_for_today import DateForToday
from kgrag.generate.extractive.expansion import Expansion
from kgrag.generate.extractive.list_neighbour import ListNeighbour
from kgrag.generate.extractive.place_hop import PlaceHop
from kgrag.generate.extractive.relation_hop import RelationHop
from kgrag.generate.extractive.which_of_two import WhichOfTwo
from kgrag.generate.extractive.yes_no import YesNo
from kgrag.generate.types import Source

ANSWERERS: tuple[Answerer, ...] = (
    ListNeighbour(),  # "And the next one?": the row or item next to the one the last turn cited
    DateForToday(),  # "When is the next coworking?": a date worked out from a stated rule
    Expansion(),  # "What does RBAC stand for?": the sentence that spells it out
    YesNo(),  # "Were A and B of the same nationality?"
    WhichOfTwo(),  # "Which film came out first, A or B?"
    RelationHop(),  # "Where was the director of film X born?"
    PlaceHop(),  # "Who was the first president of X's country?"
    BestSentences(),  # any question: the sentences that best cover it
)


def extract(asked: Asked, sources: Sequence[Source]) -> tuple[str, Extracted] | None:
    """The first answer of ``ANSWERERS`` with the name of the answerer that gave it; None when
    no source holds a sentence of words."""
    for answerer in ANSWERERS:
        if (found := answerer.answer(asked, sources)) is not None:
            return answerer.name, found
    return None
