"""A question asking what an acronym stands for, answered by the sentence that spells it out.

"What does RBAC stand for?" or "RBAC 的全称是什么？" over a guide whose opening says "用户权限模型
（Role-Based Access Control，简称 RBAC）": the sentence writing the acronym beside capitalised words
whose initials spell it (``asks.spells_out``) is the answer, in whichever script the rest of it
is written. Sentences chosen by meaning across scripts quoted unrelated ones for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgrag.generate.citations import quotable_sentences
from kgrag.generate.extractive.answerer import Extracted
from kgrag.generate.extractive.asked import Asked
from kgrag.generate.extractive.best_sentences import compose
from kgrag.generate.extractive.subjects import pick
from kgrag.generate.types import Source
from kgrag.text.asks import asked_acronyms, spells_out


class Expansion:
    """The first sentence of the sources, in rank and reading order, that spells out an acronym
    the question asks about; passes when none does."""

    name = "expansion"

    def answer(self, asked: Asked, sources: Sequence[Source]) -> Extracted | None:
        acronyms = asked_acronyms(asked.question)
        if not acronyms:
            return None
        for source in sources:
            for q in quotable_sentences(source):
                quoted = pick(source, q.sentence)
                if any(spells_out(a, quoted.body) for a in acronyms):
                    return Extracted(compose([quoted]), [quoted])
        return None
