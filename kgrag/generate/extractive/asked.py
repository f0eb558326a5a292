"""What a question asks, parsed once for every extractive answerer: the ``Asked`` record.

Built by the generator from the question as it reads it and from what retrieval already
understood (the follow-up completed from the conversation, the alias expansions of the
question's entities, a positional follow-up's place, the rules' ``Understanding``), then read
by each answerer of the registry
(``kgrag.generate.extractive.registry``). The readings shared by several answerers — the kind of
answer asked for, the question's terms and setting, its language, a date asked relative to
today, a name asked for — are computed once, on first use.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Protocol

import numpy as np

from kgrag.generate.extractive.question_setting import setting_terms
from kgrag.retrieve.followup import asked_direction, asks_by_position
from kgrag.retrieve.types import Completion, Understanding
from kgrag.text.asks import ask_of
from kgrag.text.scripts import has_han
from kgrag.text.sentences import terms

_LAST = re.compile(r"\b(?:last|final)\b|最后", re.IGNORECASE)
_FIRST = re.compile(r"\bfirst\b|第一[个项步条]", re.IGNORECASE)


@dataclass(frozen=True)
class PositionAsked:
    """What a positional follow-up asks: the item ``where`` ("after", "before", "first", "last")
    of the one the previous turn (``previous_question``, ``previous_answer`` when known) was
    about; ``own_terms``: what the follow-up asks about that item ("are family plans covered?")."""

    previous_question: str
    previous_answer: str
    where: str
    own_terms: frozenset[str] = frozenset()

    @property
    def about(self) -> str:
        """What the neighbouring section is read for: the previous question, and what the
        follow-up asks of its neighbour."""
        return " ".join([self.previous_question, *sorted(self.own_terms)])

    @classmethod
    def of(cls, completion: Completion | None) -> PositionAsked | None:
        if completion is None or not completion.positional or not completion.carried_from:
            return None
        question = completion.original
        where = asked_direction(question) or (
            "last" if _LAST.search(question) else "first" if _FIRST.search(question) else None)
        if where is None:
            return None
        own = frozenset(t for word in completion.own_terms if not _names_a_place(word) for t in terms(word))
        return cls(completion.carried_from[-1], completion.previous_answer or "", where, own)


def _names_a_place(word: str) -> bool:
    """"下一步", "最后一项": a word of the follow-up that says where, not what it asks."""
    return bool(asks_by_position(word) or asked_direction(word) or _LAST.search(word) or _FIRST.search(word))


class Meaning(Protocol):
    """Language-neutral similarity of a question and texts (``kgrag.models.meaning``)."""

    def similarities(self, question: str, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class Asked:
    """One question as the extractive answerers read it.

    ``question``: as the generator reads it (a follow-up says what it follows up on);
    ``names``: other names of the question's entities (retrieval's alias expansions: "LCA"
    finds "lowest common ancestor"); ``position``: a positional follow-up's place; ``today``:
    the day it is asked on; ``whole_sources``: how many of the first sources an answerer may
    read whole rather than their prompt window (``llm.extractive_whole_sources``);
    ``understanding``: what retrieval's rules decided about the question (None when asked
    without retrieval); ``meaning``: how close a sentence is to the question in meaning, in any
    language (None: words alone)."""

    question: str
    today: dt.date
    names: tuple[str, ...] = ()
    position: PositionAsked | None = None
    whole_sources: int = 0
    understanding: Understanding | None = field(default=None, compare=False)
    meaning: Meaning | None = field(default=None, compare=False)

    def about(self, question: str, names: tuple[str, ...] = ()) -> Asked:
        """Another question asked on the same day (a hop's: "Where was Peter Godfrey born?")."""
        return replace(self, question=question, names=names, position=None, understanding=None)

    @cached_property
    def kind(self) -> str | None:
        """The kind of answer asked for (``asks.ask_of``: time, amount, person, method, …)."""
        return ask_of(self.question)

    @cached_property
    def chinese(self) -> bool:
        return has_han(self.question)

    @cached_property
    def terms(self) -> set[str]:
        """The question's analysis terms (stemmed English, segmented Chinese, no stop words)."""
        return terms(self.question)

    @cached_property
    def setting(self) -> set[str]:
        """Terms only of the question's setting, not of what it asks (``question_setting``)."""
        return setting_terms(self.question)
