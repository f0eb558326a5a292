"""The one interface of the extractive answerers, and what they return.

An answerer reads an ``Asked`` question against the numbered sources and returns an
``Extracted`` answer — the text it composes, the sentences it quotes (``Pick``s, each cited), and
anything worked out from them — or None when the question is not of its kind or the sources do
not hold its answer. The registry (``kgrag.generate.extractive.registry``) asks them in order;
the first answer stands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kgrag.generate.types import Source
from kgrag.text.sentences import Sentence

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kgrag.generate.extractive.asked import Asked


@dataclass(eq=False)  # picks are compared by identity
class Pick:
    """A source sentence an answer quotes: ``body`` is the sentence without a Markdown list or
    heading prefix, ``terms`` its analysis terms, ``score`` what the answerer scored it."""

    source: Source
    sentence: Sentence
    body: str
    terms: set[str]
    score: float = 0.0


@dataclass
class Extracted:
    """An answer made of quoted sentences: ``text`` (each quote marked with its source number),
    the ``picks`` it quotes (cited in source order), and ``preface``: what was worked out from
    them (a date for today), written before the quotes and checked against nothing;
    ``worked_out`` says how (the answer's trace)."""

    text: str
    picks: list[Pick]
    preface: str = ""
    worked_out: dict[str, Any] | None = field(default=None)


class Answerer(Protocol):
    """Answers one kind of question from the sources, or passes (None)."""

    name: str

    def answer(self, asked: Asked, sources: Sequence[Source]) -> Extracted | None: ...
