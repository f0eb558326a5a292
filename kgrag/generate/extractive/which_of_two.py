"""Which-of-two questions about dates, answered from the sources without an LLM: "Which film came
out first, Seven Sinners or Everyday?", "Who was born later, A or B?", "Which film has the
director who died first, A or B?", "Who lived longer, A or B?".

Quoting both options' sentences, as the extractive answer otherwise does, holds both names and
leaves the choice to the reader. Here the options are found in the question (``subjects``: source
titles around "or", else the longest words the sources hold), each option's date is read from
its defining sentences — life dates from the brackets after a person's name ("( 17 November 1753
– 23 May 1815)", "(born February 13, 1971)"), any other date as the first one written after the
name ("is a 1936 British film") — after the hop to the person for "the film whose director ...",
and the answer leads with the option chosen, each date as written and cited, then the sentences:
``Seven Sinners — 1936 [1]. Everyday — 2012 [2]. Seven Sinners is a 1936 British ...``.

No choice without both dates, or when they tie at the precision both are written with (1936 and
"May 1936"): the usual extractive answer stands. Measured with ``kgrag eval --answers``
(docs/decisions.md, "Comparisons and hops"): how often the answer's first sentence holds the
gold option.
"""

from __future__ import annotations

import datetime as dt
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
)
from kgrag.generate.types import Source
from kgrag.text.patterns import MONTH_NAME, MONTH_NUMBER, YEAR

_WHICH = re.compile(r"^\s*(?:which|who|whose|what|was|were|is|are|did)\b", re.I)
_EARLIEST = re.compile(r"\b(?:first|earlier|earliest|older|oldest|sooner|before)\b", re.I)
_LATEST = re.compile(r"\b(?:later|latest|last|more\s+recently|most\s+recently|recent|newer|newest|younger|youngest)\b", re.I)
_AGE = re.compile(r"\b(?:older|oldest|younger|youngest)\b", re.I)
_LONGER = re.compile(r"\blived?\s+longer\b", re.I)
_MONTH = f"(?i:{MONTH_NAME})"
_DATE = re.compile(
    rf"(?P<d1>\d{{1,2}})\s+(?P<m1>{_MONTH}),?\s+(?P<y1>\d{{3,4}})"  # 17 November 1753
    rf"|(?P<m2>{_MONTH})\s+(?P<d2>\d{{1,2}}),?\s+(?P<y2>\d{{3,4}})"  # February 13, 1971
    rf"|(?P<m3>{_MONTH})\s+(?P<y3>\d{{4}})"  # May 1936
    rf"|(?<![\d.,])(?P<y4>{YEAR})(?![\d.,]\d|\d|s\b|’s\b|'s\b)"  # 1936, not "the 1980s"
)
_BORN = re.compile(r"\b(?:born|b\.)\s*", re.I)
_DIED = re.compile(r"\b(?:died|d\.)\s*", re.I)


@dataclass(frozen=True)
class WhichAsked:
    options: tuple[str, str]  # as written in the question
    relation: str | None  # "director": compare the options' directors
    # "birth", "death", "lifespan" (the longer wins), "event" (the first date written after the
    # name) or "age" (births where both options have one, else events)
    date: str
    earliest: bool  # the earlier date (the shorter life) wins


@dataclass(frozen=True)
class _Date:
    value: tuple[int, int, int]  # year, month, day; 0 where not written
    surface: str


@dataclass(frozen=True)
class _Read:
    option: str
    said: str  # what the answer says of the option: "1936", "born 17 November 1753"
    key: tuple[int, int, int]  # compared; for a lifespan, the life's length
    evidence: list[Pick]  # the dated sentence last


def answer(question: str, sources: Sequence[Source]) -> tuple[str, list[Pick]] | None:
    """The option chosen with both dates and the sentences they come from, or None when the
    question is no which-of-two question about dates or the sources do not settle it."""
    asked = which_asked(question, sources)
    if asked is None:
        return None
    dates = ("birth", "event") if asked.date == "age" else (asked.date,)
    for date in dates:
        read = [_read(option, asked.relation, date, sources) for option in asked.options]
        if read[0] is not None and read[1] is not None:
            break
    else:
        return None
    a, b = read[0], read[1]
    a_first = _earlier(a.key, b.key, date)
    if a_first is None:
        return None
    winner, other = (a, b) if a_first == asked.earliest else (b, a)
    picks = in_reading_order([*winner.evidence, *other.evidence])
    # The option chosen is the first sentence, alone: what a reader takes as the answer.
    head = " ".join(f"{r.option} — {r.said} [{r.evidence[-1].source.n}]." for r in (winner, other))
    return f"{head} {compose(picks)}", picks


def which_asked(question: str, sources: Sequence[Source]) -> WhichAsked | None:
    """What a which-of-two question about dates asks; None for any other question."""
    if _WHICH.match(question) is None or not re.search(r"\bor\b", question, re.I):
        return None
    body = question.strip().rstrip("?").strip()
    found = subjects_around(body, sources, (" or ",))
    if found is None:
        return None
    (a, a_span), (b, b_span) = found
    rest = body[:a_span[0]] + " " + body[a_span[1]:b_span[0]] + " " + body[b_span[1]:]
    relation = RELATION.search(rest)
    if _LONGER.search(rest):
        return WhichAsked((a, b), _relation(relation), "lifespan", earliest=False)
    earliest, latest = _EARLIEST.search(rest), _LATEST.search(rest)
    if bool(earliest) == bool(latest):
        return None
    if re.search(r"\bborn\b", rest, re.I):
        date = "birth"
    elif _AGE.search(rest):
        date = "age"  # a birth where both options have one ("Which tennis player is older"), else a date
    elif re.search(r"\b(?:died|death)\b", rest, re.I):
        date = "death"
    else:
        date = "event"
    return WhichAsked((a, b), _relation(relation), date, earliest=bool(earliest))


def _relation(match: re.Match[str] | None) -> str | None:
    return match.group(1).lower() if match else None


def _read(option: str, relation: str | None, date: str, sources: Sequence[Source]) -> _Read | None:
    said = profile(option, sources)
    name, led = bare(option), []
    if relation is not None:
        hop = led_to(said, relation)
        if hop is None:
            return None
        name, named_in = hop
        said, led = profile(name, sources), [named_in]
    for source, sentence in said:
        dated = _dated(name, sentence.text, date)
        if dated is not None:
            text, key = dated
            via = f"{relation} {name}, " if relation else ""
            return _Read(bare(option), via + text, key, [*led, pick(source, sentence)])
    return None


def _dated(name: str, sentence: str, date: str) -> tuple[str, tuple[int, int, int]] | None:
    """What ``sentence`` dates ``name`` with, as said and as compared."""
    at = re.search(re.escape(name), sentence, re.I)
    after = at.end() if at else 0
    if date == "event":
        brackets = bracketed(sentence)
        found = [d for d in _dates(sentence, after) if not any(a <= d[0] < b for a, b in brackets)]
        return (found[0][1].surface, found[0][1].value) if found else None
    life = _life(sentence, after)
    if life is None:
        return None
    birth, death = life
    if date == "birth":
        return (f"born {birth.surface}", birth.value) if birth else None
    if date == "death":
        return (f"died {death.surface}", death.value) if death else None
    if birth is None or death is None:
        return None
    return f"{birth.surface} – {death.surface}", _length(birth.value, death.value)


def _life(sentence: str, after: int) -> tuple[_Date | None, _Date | None] | None:
    """Birth and death from the first brackets after the name that hold a date: "( 17 November
    1753 – 23 May 1815)", "(born February 13, 1971)", "(died 1990)", "(1901 – 1953)"."""
    dated = [(sentence[a + 1:b - 1], found) for a, b in bracketed(sentence) if a >= after - 1
             if (found := _dates(sentence[a + 1:b - 1], 0))]
    if not dated:  # ("Russian: Андрей ...") before "(born 15 April 1966)" is skipped
        return None
    inside, dates = dated[0]
    if _BORN.search(inside) and not _DIED.search(inside):
        return dates[0][1], None
    if _DIED.search(inside) and not _BORN.search(inside) and len(dates) == 1:
        return None, dates[0][1]
    if len(dates) >= 2 and re.search(r"[–—-]|\bto\b", inside[dates[0][2]:dates[1][0]]):
        return dates[0][1], dates[1][1]
    return None


def _dates(text: str, start: int) -> list[tuple[int, _Date, int]]:
    """Each date written in ``text`` from ``start``: (its start, the date, its end)."""
    out = []
    for m in _DATE.finditer(text, start):
        year = int(m.group("y1") or m.group("y2") or m.group("y3") or m.group("y4"))
        month_word = m.group("m1") or m.group("m2") or m.group("m3")
        month = _month(month_word) if month_word else 0
        day = int(m.group("d1") or m.group("d2") or 0)
        out.append((m.start(), _Date((year, month, day), m.group().strip()), m.end()))
    return out


def _month(word: str) -> int:
    return MONTH_NUMBER[word.rstrip(".").casefold()]


def _length(birth: tuple[int, int, int], death: tuple[int, int, int]) -> tuple[int, int, int]:
    """A life's length: (difference of the years, days when both dates are whole, else 0, 0)."""
    days = 0
    if all(birth) and all(death):
        try:
            days = (dt.date(*death) - dt.date(*birth)).days
        except ValueError:  # a day the month does not have: read as years only
            days = 0
    return death[0] - birth[0], days, 0


def _earlier(a: tuple[int, int, int], b: tuple[int, int, int], date: str) -> bool | None:
    """Whether ``a`` comes before (is shorter than) ``b``; None when the precision both are
    written with cannot tell: 1936 against May 1936, two lives whose years differ by less than
    two without whole dates."""
    if date == "lifespan":
        if a[1] and b[1]:
            return None if a[1] == b[1] else a[1] < b[1]
        return None if abs(a[0] - b[0]) < 2 else a[0] < b[0]
    for x, y in zip(a, b):
        if not x or not y:
            return None
        if x != y:
            return x < y
    return None


class WhichOfTwo:
    """"Which film came out first, A or B?": each option's date read, the choice said."""

    name = "which_of_two"

    def answer(self, asked: Asked, sources: Sequence[Source]) -> Extracted | None:
        found = answer(asked.question, sources)
        return None if found is None else Extracted(*found)
