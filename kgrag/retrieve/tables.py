"""The column a question asks for, and the sections whose tables have it.

A team's documents keep their facts in tables: executives and their Slack channels, divisions
and their outputs, levels and their scope. "What is the Slack channel for the executive who
leads …?" asks for a *channel*: of the sections the graph walk reaches, one with a table headed
"Channel" holds it. ``asked_column`` reads the asked-for noun of an English question ("What is
the [job] title of …", "Which Slack channel prefix is used …"); ``has_column`` finds it among a
Markdown table's header cells (as itself or an inflection). Measured in the graph path's
endpoint reading (``GRAPH_WALK.table_weight``; docs/decisions.md, "The asked-for column").
"""

from __future__ import annotations

import functools
import re

from kgrag.retrieve.word_forms import LATIN_WORD, inflection_found
from kgrag.text.markdown_tables import header_cells
from kgrag.text.normalize import fold_marks

# "What is the [name of the] [adjectives] NOUN of/for/…" and "Which [adjectives] NOUN is/should/…": the noun
# right before the preposition or verb is what is asked for. The last such phrase counts ("The
# 'ext-' prefix is for …. What is the Slack channel for …?" asks for the channel).
_WHAT_IS = re.compile(
    r"\b(?:what|which)\s+(?:is|are|was|were)\s+(?:the|a|an)\s+(?:name\s+of\s+(?:the|a|an)\s+)?"
    r"(?:[\w-]+\s+){0,3}?(?P<noun>[\w-]+)\s+"
    r"(?:for|of|that|to|used|where|in|who|which|whose|on|at|given)\b", re.IGNORECASE)
_WHICH_NOUN = re.compile(
    r"\bwhich\s+(?:[\w-]+\s+){0,2}?(?P<noun>[\w-]+)\s+(?:is|are|was|were|do|does|did|should|can|could|will|would|has|have)\b",
    re.IGNORECASE)
# Nouns that ask for no column: a name or a term is any cell's, not one column's.
_GENERIC = frozenset("name names term terms word words one ones thing things way ways kind type part "
                     "difference purpose reason meaning example number".split())


def asked_column(question: str) -> str | None:
    """The (case-folded) noun an English question asks the value of, or None."""
    found = [m for pattern in (_WHAT_IS, _WHICH_NOUN) for m in pattern.finditer(question)]
    if not found:
        return None
    noun = max(found, key=lambda m: m.start()).group("noun").casefold()
    return None if noun in _GENERIC or not noun.isalpha() else noun


def has_column(text: str, noun: str) -> bool:
    """Whether a Markdown table in ``text`` has a header cell holding ``noun`` (or an inflection)."""
    return inflection_found(noun, header_words(text))


@functools.lru_cache(maxsize=4096)
def header_words(text: str) -> frozenset[str]:
    """The folded words of every Markdown table header row in ``text`` (the row above a
    separator line). Kept for the last 4,096 texts: the walk reads the same sections again."""
    return frozenset(w for cell in header_cells(text) for w in LATIN_WORD.findall(fold_marks(cell)))
