"""What a letter of an acronym stands for: "In the MEDDPPICC sales framework, what does the 'I'
stand for?" names nothing the answer's section says — only the letter. A handbook that explains
an acronym gives each component a section of its own under the acronym's page ("MEDDPPICC >
Metrics", "MEDDPPICC > Identify Pain"), and the graph holds those headings as sections next to
the acronym's (PART_OF it; the merged edge may read CO_OCCURS where they also share chunks, and a
heading that is also a defined term may be typed as the term). So its neighbours that are sections
or PART_OF it, whose words start with the asked letters, are the acronym's parts the question
names: they seed the graph walk and widen BM25's query.

The question must ask what one to three quoted (or "letter X") capitals stand for, and link an
all-capital acronym that holds those letters in that order (docs/decisions.md, "Acronym
letters").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgrag.retrieve.tuning import LINKING
from kgrag.retrieve.types import LinkedEntity
from kgrag.stores.base import GraphReader
from kgrag.types import PART_OF, SECTION

_ASKS_LETTERS = re.compile(
    r"\b[Ww]hat\s+(?:does|do|did)\s+(?:the\s+)?(?:letters?\s+)?[\"'‘“]?(?P<letters>[A-Z]{1,3})[\"'’”]?"
    r"(?:\s+in\s+(?:the\s+)?[\w-]+)?\s+(?:stand|stands)\s+for\b")


def asked_letters(question: str) -> str | None:
    """The capitals a question asks the meaning of ("what does the 'I' stand for" → "I")."""
    m = _ASKS_LETTERS.search(question)
    return m.group("letters") if m else None


def letter_parts(question: str, linked: Sequence[LinkedEntity], graph: GraphReader) -> list[LinkedEntity]:
    """The sections PART_OF an acronym the question links whose words' initials start with the
    letters it asks about; none when the question asks no letter or links no such acronym."""
    letters = asked_letters(question)
    if letters is None:
        return []
    out: list[LinkedEntity] = []
    for le in linked:
        acronym = le.surface.strip()
        if not (acronym.isupper() and acronym.isalpha() and len(acronym) >= 3 and _holds(acronym, letters)):
            continue
        near = graph.neighbors([le.key], 1, LINKING.acronym_neighbours_read)
        part_of = {k for k, p in near.items() if p.hops == 1 and p.edges == [PART_OF]}
        sections = [e for e in map(graph.get_entity, sorted(k for k, p in near.items() if p.hops == 1))
                    if e is not None and (e.type == SECTION or e.key in part_of)]
        if len(sections) > LINKING.acronym_max_parts:
            continue
        out += [LinkedEntity(e.name, e.key, e.name, "acronym letter", 1.0) for e in sections
                if _initials(e.name).startswith(letters)]
    return out


def _holds(acronym: str, letters: str) -> bool:
    """Whether ``letters`` occur in ``acronym`` in order (a subsequence)."""
    it = iter(acronym)
    return all(ch in it for ch in letters)


def _initials(name: str) -> str:
    return "".join(w[0].upper() for w in re.findall(r"[A-Za-z][\w'-]*", name))
