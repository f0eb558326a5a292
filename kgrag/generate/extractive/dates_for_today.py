"""Dates worked out for today from a rule the sources state ("monthly coworking … second Wednesday
of each month", "by the 15th", "Q4: November 1 through January 31").

"What is the date of the next Boston coworking?" has no sentence holding its answer: the
handbook states the rule, the answer depends on the day it is asked. A question reading a date
relative to now (next, last, current, previous, last month, this month …) and asking when is
answered with the date the rule gives for today, then the rule's sentence quoted and cited:

    2025-11-12 (Wednesday), worked out for today (2025-11-11) from [1]: #loc_boston | … monthly
    coworking in downtown Boston second Wednesday of each month [1].

Rules read: a weekday of each month ("second Wednesday of each month", "3rd Thursday of the
Month", "last Friday of every month", "每月第二个星期三"), a day of each month ("by the 8th of each
month", "by the 15th" in a sentence about a monthly thing, "每月15日前") and periods ("November 1
through January 31", "2025-11-01 to 2026-01-31", "11月1日至1月31日"; a period without a year recurs
yearly); for a question naming today, also an English date written without a year ("Sep 1:
DEADLINE …"). The words are ``kgrag.generate.extractive.date_cues``'s. A Chinese question asks a date with
"什么时候 / 哪天 / 几号 / 日期 / 截止" and names today with "下次 / 上次 / 本月 / 上个月 / 当前 / 这个季度 …".
The arithmetic is ``dateutil``'s. Anything else (a question with no relative cue, a rule this
module does not read) leaves the usual extractive answer.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from dateutil.relativedelta import relativedelta

from kgrag.generate.citations import source_sentences
from kgrag.generate.extractive import date_cues as cues
from kgrag.generate.extractive.answerer import Extracted, Pick
from kgrag.generate.extractive.asked import Asked
from kgrag.generate.extractive.best_sentences import compose
from kgrag.generate.extractive.subjects import pick
from kgrag.generate.tuning import EXTRACTIVE
from kgrag.generate.types import Source
from kgrag.retrieve.word_forms import asks_when
from kgrag.text.sentences import Sentence, terms


@dataclass(frozen=True)
class DateAsked:
    """A question asking for a date relative to the day it is asked."""

    direction: str  # "next" | "previous" | "current"
    anchored: bool  # the question names today ("current", "next", "last month" …), not only "last"
    month: int | None  # the occurrence lies this many months from today's ("last month": -1)
    year: int | None  # … this many years from today's ("this year": 0)
    edge: str | None  # of a period: "start" | "end"; None: not said
    length: tuple[int, int] | None  # days a period asked about lasts ("quarter": 88–93)


@dataclass(frozen=True)
class _Rule:
    source: Source
    sentence: Sentence
    span: tuple[int, int]  # of the rule in the sentence's text
    monthly: relativedelta | None = None  # the occurrence within a month: day=1 + weekday(+n), or day=d
    period: tuple[dt.date, dt.date] | None = None  # one occurrence (a yearly one: ``yearly``)
    yearly: bool = False
    event: tuple[int, int, int] | None = None  # (month, first day, last day) stated without a year


def date_asked(question: str) -> DateAsked | None:
    """What a question reading a date relative to today asks; None for any other question."""
    if not (asks_when(question) or cues.DUE.search(question)):
        return None
    offset, year = _offset(cues.MONTH_OFFSET, question), _offset(cues.YEAR_OFFSET, question)
    rest = cues.YEAR_OFFSET.sub(" ", cues.MONTH_OFFSET.sub(" ", question))
    rest = re.sub(r"\b(?:latest|last|first)\s+(?:date|day)\b", " ", rest, flags=re.I)
    anchored = bool(cues.NOW.search(question)) or offset is not None or year is not None
    direction = ("previous" if cues.PREVIOUS.search(rest) else "next" if cues.NEXT.search(rest)
                 # "a new hire who started today … their first monthly invoice": the next one
                 else "next" if anchored and re.search(r"\bfirst\b", rest, re.I)
                 else "current" if cues.CURRENT.search(rest) or anchored else None)
    if direction is None:
        return None
    edge = "end" if cues.EDGE_END.search(question) else "start" if cues.EDGE_START.search(question) else None
    noun = cues.PERIOD_NOUN.search(rest)
    return DateAsked(direction, anchored, offset, year, edge, cues.period_length(noun) if noun else None)


def _offset(pattern: re.Pattern[str], question: str) -> int | None:
    """-1 for "last/previous month" (上个月), 0 for "this/current month" (本月), 1 for "next/coming
    month" (下个月)."""
    m = pattern.search(question)
    if m is None:
        return None
    which = (m.group("which") or m.group("zh")).lower()
    return -1 if which in cues.EARLIER else 1 if which in cues.LATER else 0


def answer(question: str, sources: Sequence[Source], today: dt.date) -> tuple[str, list[Pick], dict] | None:
    """The preface naming the worked-out date, the rule's sentence picked, and what was worked
    out (for the answer's ``worked_out``); None when the question asks no date relative to today
    or the sources hold no rule that gives one."""
    asked = date_asked(question)
    if asked is None:
        return None
    whole = [s.whole() for s in sources]  # a rule may lie past the prompt's window
    read = [(s, source_sentences(s)) for s in whole]
    rules = [r for s, sentences in read for r in _rules(s, sentences)]
    if asked.anchored:  # a date written without a year is dated by the day asked
        rules += [r for s, sentences in read for r in _events(s, sentences)]
    else:
        rules = [r for r in rules if r.monthly is not None or r.yearly]
    wanted = _weights(terms(cues.WHEN_WORDS.sub(" ", question)), whole)
    scores = [_score(r, wanted, asked) for r in rules]
    # A rule sharing none of the question's topic words is about something else.
    ranked = sorted((i for i, score in enumerate(scores) if score > 0),
                    key=lambda i: (-scores[i], rules[i].source.n, rules[i].sentence.start))
    found = next((f for i in ranked if (f := _resolve(i, rules, scores, asked, today)) is not None), None)
    if found is None:
        return None
    date, rule = found
    picked = pick(rule.source, rule.sentence)
    said = rule.sentence.text[rule.span[0]:rule.span[1]]
    preface = (f"{date.isoformat()} ({date.strftime('%A')}), worked out for today ({today.isoformat()}) "
               f"from [{rule.source.n}]:")
    worked = {"date": date.isoformat(), "today": today.isoformat(), "rule": said, "source": rule.source.n,
              "direction": asked.direction, "month": asked.month, "edge": asked.edge}
    return preface, [picked], worked


def note(worked: dict) -> str:
    """What was worked out, as the LLM prompt says it after today's date."""
    day = dt.date.fromisoformat(worked["date"])
    return (f"By the rule \"{worked['rule']}\" in source [{worked['source']}], the date asked is "
            f"{day.isoformat()} ({day.strftime('%A')}).")


def _resolve(best: int, rules: list[_Rule], scores: list[float], asked: DateAsked,
             today: dt.date) -> tuple[dt.date, _Rule] | None:
    """The date ``rules[best]`` gives for the question (``scores``: each rule's ``_score``): a
    monthly rule's occurrence; for a period, the one asked among it and the periods its source
    states as well as it (its siblings: "Q1: …", "Q2: …"); None when none is the one asked (no
    period holds today)."""
    rule = rules[best]
    if rule.event is not None:
        return _event_date(rule.event, asked, today), rule
    if rule.period is None:
        return _occurrence(rule, asked, today), rule
    siblings = [r for r, score in zip(rules, scores, strict=True)
                if r.source.n == rule.source.n and r.period is not None and score == scores[best]]
    return _from_periods(siblings, asked, today)


def _weights(wanted: set[str], sources: list[Source]) -> dict[str, float]:
    """Each topic word of the question weighted by how few sources hold it (log(1 + N / df)):
    "invoice" says more than "month" or "must"."""
    held = [terms(s.header + "\n" + s.text) for s in sources]
    return {t: math.log(1 + len(held) / max(1, sum(t in h for h in held))) for t in wanted}


def _score(rule: _Rule, wanted: dict[str, float], asked: DateAsked) -> float:
    """How well a rule answers: the weighted topic words of the question its line shares (a
    table row, a paragraph: "All things going on in Berlin. We are regularly meeting up on the 3rd
    Thursday of the Month."; a period's: and its source's heading), discounted by rank as the
    extractive answer does; a period of the length the question names ("quarter") before anything
    else."""
    said = terms(_line(rule))
    if rule.period is not None:  # a list item ("Q4: November 1 through January 31") is about its heading
        said |= terms(rule.source.header)
    held = math.fsum(wanted.get(t, 0.0) for t in said)  # exact: a set's order must not break ties
    if held == 0:
        return 0.0
    fits = asked.length is not None and rule.period is not None and _lasts(rule, asked)
    return held / (1 + EXTRACTIVE.rank_discount * (rule.source.n - 1)) + (100.0 if fits else 0.0)


def _lasts(rule: _Rule, asked: DateAsked) -> bool:
    assert rule.period is not None
    if asked.length is None:
        return True
    days = (rule.period[1] - rule.period[0]).days + 1
    return asked.length[0] <= days <= asked.length[1]


def _line(rule: _Rule) -> str:
    """The line of its source the rule's sentence lies on."""
    text = rule.source.text
    start = text.rfind("\n", 0, rule.sentence.start) + 1
    end = text.find("\n", rule.sentence.end)
    return text[start:end if end >= 0 else len(text)]


def _rules(source: Source, sentences: list[Sentence]) -> list[_Rule]:
    out: list[_Rule] = []
    for sentence in sentences:
        text = sentence.text
        for m in cues.MONTHLY_WEEKDAY.finditer(text):
            n = cues.ORDINALS[(m.group("n") or m.group("zn") or m.group("zlast")).lower()]
            day = cues.WEEKDAYS[(m.group("day") or m.group("zday")).lower()]
            when = relativedelta(day=31, weekday=day(-1)) if n < 0 else relativedelta(day=1, weekday=day(+n))
            out.append(_Rule(source, sentence, m.span(), monthly=when))
        if cues.MONTHLY.search(text):
            for m in cues.MONTHLY_DAY.finditer(text):
                if (d := cues.zh_number(m.group("d") or m.group("zd"))) is not None:
                    out.append(_Rule(source, sentence, m.span(), monthly=relativedelta(day=d)))
        for m in [*cues.PERIOD.finditer(text), *cues.ZH_PERIOD.finditer(text)]:
            if (rule := _period(source, sentence, m)) is not None:
                out.append(rule)
        for m in cues.ISO_PERIOD.finditer(text):
            try:
                start, end = dt.date.fromisoformat(m.group(1)), dt.date.fromisoformat(m.group(2))
            except ValueError:
                continue
            if start <= end:
                out.append(_Rule(source, sentence, m.span(), period=(start, end)))
    return out


def _events(source: Source, sentences: list[Sentence]) -> list[_Rule]:
    """The dates without a year the source states outside any rule or period, each a rule."""
    out: list[_Rule] = []
    examples = [m.start() for m in cues.HYPOTHETICAL.finditer(source.text)]
    for sentence in sentences:
        text = sentence.text
        found = [m for m in cues.EVENT.finditer(text) if not m.group("y")]  # most sentences: none
        if not found or cues.WRITTEN_YEAR.search(text) or _in_example(source.text, sentence, examples):
            continue
        taken = [m.span() for m in cues.PERIOD.finditer(text)]
        for m in found:
            if any(a <= m.start() < b for a, b in taken):
                continue
            month, first = cues.MONTHS[m.group("m").lower()], int(m.group("d"))
            last = int(m.group("d2") or first)
            if not (first <= last and _on(2000, month, last)):  # 2000: a leap year, February 29 is a day
                continue
            out.append(_Rule(source, sentence, m.span(), event=(month, first, last)))
    return out


def _in_example(text: str, sentence: Sentence, examples: list[int]) -> bool:
    """Whether the sentence lies in an example: its paragraph says "for example" (or "if …")
    at or before it ("For example, if the change is processed on June 15, … . The corresponding
    start of the pay period is June 21 …"). ``examples``: where the text says so."""
    gap = text.rfind("\n\n", 0, sentence.start)
    start = gap + 2 if gap >= 0 else 0
    return any(start <= at < sentence.end for at in examples)


def _period(source: Source, sentence: Sentence, m: re.Match[str]) -> _Rule | None:
    """A "Month D [YYYY] to Month D [YYYY]" ("[YYYY年]M月D日至[YYYY年]M月D日") period; without
    years, the occurrence starting in 2001 (not a leap year) stands for every year's."""
    y1, y2 = m.group("y1"), m.group("y2")
    try:
        m1, d1 = _month(m.group("m1")), int(m.group("d1"))
        m2, d2 = _month(m.group("m2")), int(m.group("d2"))
        if y1 or y2:
            start = dt.date(int(y1 or y2), m1, d1)
            end = dt.date(int(y2 or y1), m2, d2)
            if end < start and not y2:
                end = dt.date(start.year + 1, m2, d2)
            return _Rule(source, sentence, m.span(), period=(start, end)) if start <= end else None
        start = dt.date(2001, m1, d1)
        end = dt.date(2001 if (m2, d2) >= (m1, d1) else 2002, m2, d2)
    except ValueError:  # "February 30"
        return None
    return _Rule(source, sentence, m.span(), period=(start, end), yearly=True)


def _month(written: str) -> int:
    """"Nov", "november" or "11" (of "11月") as a month number."""
    return int(written) if written.isdigit() else cues.MONTHS[written.lower()]


def _occurrence(rule: _Rule, asked: DateAsked, today: dt.date) -> dt.date:
    """The date a monthly rule gives: in the month asked, or the next / previous / this month's
    occurrence seen from today."""
    assert rule.monthly is not None
    this_month = today.replace(day=1)

    def of(month_start: dt.date) -> dt.date:
        return month_start + rule.monthly  # type: ignore[operator]

    if asked.month is not None:
        return of(this_month + relativedelta(months=asked.month))
    here = of(this_month)
    if asked.direction == "next":
        return here if here >= today else of(this_month + relativedelta(months=1))
    if asked.direction == "previous":
        return here if here < today else of(this_month - relativedelta(months=1))
    return here


def _event_date(event: tuple[int, int, int], asked: DateAsked, today: dt.date) -> dt.date:
    """The day of an event stated without a year (of days, the last when an end is asked): in
    the month (year) asked when one falls there, else the last before today (``previous``), the
    first from today (``next``), or the nearest ("the deadline for the cycle effective this month":
    Sep 1 seen from 2025-11-11 is 2025-09-01)."""
    month, first, last = event
    day = last if asked.edge == "end" else first
    # Four years each way: a February 29 has an occurrence before and after today too.
    days = [d for year in range(today.year - 4, today.year + 5) if (d := _on(year, month, day)) is not None]
    if asked.month is not None or asked.year is not None:
        inside = [d for d in days if _within(d, asked, today)]
        if inside:
            return inside[0]
    if asked.direction == "previous":
        return max(d for d in days if d < today)
    if asked.direction == "next":
        return min(d for d in days if d >= today)
    return min(days, key=lambda d: (abs((d - today).days), d))


def _on(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:  # February 29 of a common year
        return None


def _from_periods(rules: list[_Rule], asked: DateAsked, today: dt.date) -> tuple[dt.date, _Rule] | None:
    """The start or end of the period asked: the one holding today (the shortest), the last one
    ended before today, the first one starting after it, or the one ending (starting) in the
    month asked; only periods of the asked length when the question names one."""
    fitting = [r for r in rules if _lasts(r, asked)]
    instances = [(start, end, r) for r in fitting for start, end in _instances(r, today)]
    if not instances:
        return None
    edge = asked.edge or ("end" if asked.direction == "previous" else "start")
    chosen: tuple[dt.date, dt.date, _Rule] | None = None
    if asked.month is not None or asked.year is not None:
        inside = [i for i in instances if _within(i[1] if edge == "end" else i[0], asked, today)]
        chosen = min(inside, key=lambda i: (i[1] - i[0], i[0])) if inside else None
    elif asked.direction == "current":
        holding = [i for i in instances if i[0] <= today <= i[1]]
        chosen = min(holding, key=lambda i: (i[1] - i[0], i[0])) if holding else None
    elif asked.direction == "previous":
        ended = [i for i in instances if i[1] < today]
        chosen = max(ended, key=lambda i: (i[1], -(i[1] - i[0]).days)) if ended else None
    else:
        coming = [i for i in instances if i[0] > today]
        chosen = min(coming, key=lambda i: (i[0], i[1] - i[0])) if coming else None
    if chosen is None:
        return None
    return (chosen[1] if edge == "end" else chosen[0]), chosen[2]


def _within(day: dt.date, asked: DateAsked, today: dt.date) -> bool:
    """Whether ``day`` lies in the month (or year) the question names."""
    if asked.month is not None:
        return day.replace(day=1) == today.replace(day=1) + relativedelta(months=asked.month)
    return asked.year is not None and day.year == today.year + asked.year


def _instances(rule: _Rule, today: dt.date) -> list[tuple[dt.date, dt.date]]:
    assert rule.period is not None
    start, end = rule.period
    if not rule.yearly:
        return [(start, end)]
    out = []
    for year in range(today.year - 2, today.year + 2):
        try:
            s = start.replace(year=year)
            out.append((s, end.replace(year=year + (end.year - start.year))))
        except ValueError:  # February 29
            continue
    return out


class DateForToday:
    """"When is the next Boston coworking?": the date a stated rule gives for the day asked."""

    name = "date_for_today"

    def answer(self, asked: Asked, sources: Sequence[Source]) -> Extracted | None:
        worked = answer(asked.question, sources, asked.today)
        if worked is None:
            return None
        preface, picks, worked_out = worked
        return Extracted(compose(picks), picks, preface, worked_out)
