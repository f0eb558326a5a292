"""A question asking for a name, answered by a section's heading.

Manuals, handbooks and wikis name a thing in a heading and describe it below: "What is the name
of the check run by the CI job to prevent masculine-coded language?" is answered by the section
"Inclusive Language Check", whose sentences ("We use an open source Ruby gem … to flag
masculine-coded words") never repeat the name. When the question asks for a name ("what is the
name of / term for …", "what is … called") and the answer's first sentence lies in a section
whose heading neither the question nor the answer says, the answer opens with that heading:

    Inclusive Language Check: We use an open source Ruby gem … [1].
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgrag.generate.extractive.answerer import Pick
from kgrag.generate.extractive.sections import heading_levels
from kgrag.generate.tuning import EXTRACTIVE
from kgrag.lexicon.headings import names_a_part_of_text
from kgrag.text.analyze import analyze
from kgrag.text.sentences import terms

_ASKS_NAME = re.compile(
    r"\b(?:what|which)\s+(?:is|was|are|were)\s+the\s+(?:name|term|title|label|word)s?\s+(?:of|for|given to|used for)\b"
    r"|\bwhat\s+(?:is|are|was|were)\s+.{3,120}?\bcalled\b|\bwhat\s+do\s+(?:we|you|they)\s+call\b",
    re.I,
)
# Where the kind's phrase ends: "the check | that is run …", "the channel | where …".
_KIND_END = re.compile(r"\s+(?:that|which|who|whom|whose|where|when|used|in|for|to|by|with|at|on|of)\b|[,?;:]", re.I)


def heading_answer(question: str, picks: Sequence[Pick]) -> str | None:
    """The heading of the section the answer's first sentence lies in, when the question asks
    for a name of a kind ("the name of the check …") that the heading or its parent section
    names ("Inclusive Language Check"; "Product Principles > Avoid "Not Invented Here"
    Syndrome"), and the answer's first sentence holds under half the heading's words (it does
    not say the name already); None otherwise."""
    kind = asked_kind(question)
    if not picks or kind is None:
        return None
    levels = heading_levels(picks[0].source, picks[0].sentence)
    if len(levels) == 0:
        return None
    heading = levels[-1]
    words = terms(heading)
    # A heading that names a part of a page ("Overview", "Examples") is never an answer.
    if not words or len(heading.split()) > EXTRACTIVE.max_heading_words or names_a_part_of_text(heading):
        return None
    if kind not in terms(" ".join(levels[-2:])) or len(words & picks[0].terms) * 2 >= len(words):
        return None
    return heading


def asked_kind(question: str) -> str | None:
    """The (stemmed) noun naming the kind of thing whose name is asked: "What is the name of
    the GitLab product principle that …" → "principl"; None when no name is asked."""
    m = _ASKS_NAME.search(question)
    if m is None:
        return None
    rest = question[m.end():]
    phrase = _KIND_END.split(rest, maxsplit=1)[0]
    words = [w for w in analyze(phrase) if not w.isdigit()]
    return words[-1] if words else None
