"""The words that state a date rule in a source and that ask a date relative to today in a
question, English and Chinese: the patterns ``kgrag.generate.extractive.dates_for_today`` reads (its logic stays
there). English and Chinese alternatives share one pattern where they mean the same; a Chinese
alternative needs no word boundary.
"""

from __future__ import annotations

import re

from dateutil.relativedelta import FR, MO, SA, SU, TH, TU, WE
from dateutil.relativedelta import weekday as Weekday

from kgrag.text.patterns import MONTH_ALTERNATIVES, MONTH_NUMBER, WHEN_WORDS_ZH, YEAR, alternatives

MONTHS = MONTH_NUMBER
WEEKDAYS: dict[str, Weekday] = {"monday": MO, "tuesday": TU, "wednesday": WE, "thursday": TH, "friday": FR,
                                "saturday": SA, "sunday": SU,
                                "一": MO, "二": TU, "三": WE, "四": TH, "五": FR, "六": SA, "日": SU, "天": SU}
ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4,
            "fifth": 5, "5th": 5, "last": -1,
            "一": 1, "1": 1, "二": 2, "2": 2, "三": 3, "3": 3, "四": 4, "4": 4, "五": 5, "5": 5, "最后一": -1}
_ZH_NUMBER = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


def zh_number(text: str) -> int | None:
    """A day of the month written in digits or Chinese numerals ("15", "十五", "二十八"), 1..31."""
    if text.isdigit():
        n = int(text)
    elif "十" in text:
        tens, _, ones = text.partition("十")
        n = (_ZH_NUMBER.get(tens, 0) if tens else 1) * 10 + (_ZH_NUMBER.get(ones, 0) if ones else 0)
    else:
        n = _ZH_NUMBER.get(text, 0)
    return n if 1 <= n <= 31 else None


# -- rules in a source -------------------------------------------------------------------------
MONTH = r"(?P<{0}>" + MONTH_ALTERNATIVES + r")\.?"
_MONTH_DAY = MONTH + r"\s+(?P<{1}>\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(?P<{2}>" + YEAR.replace("{", "{{").replace("}", "}}") + r"))?"
_UNTIL = r"\s*(?:through|thru|to|until|till|–|—|-)\s*"
PERIOD = re.compile(r"\b" + _MONTH_DAY.format("m1", "d1", "y1") + _UNTIL + r"\b"
                    + _MONTH_DAY.format("m2", "d2", "y2") + r"\b", re.I)
# "2025年11月1日至2026年1月31日", "11月1日到1月31日"
_ZH_MONTH_DAY = r"(?:(?P<{2}>" + YEAR.replace("{", "{{").replace("}", "}}") + r")\s*年\s*)?(?P<{0}>\d{{1,2}})\s*月\s*(?P<{1}>\d{{1,2}})\s*[日号]"
ZH_PERIOD = re.compile(_ZH_MONTH_DAY.format("m1", "d1", "y1") + r"\s*(?:至|到|—|–|-|~|～)\s*"
                       + _ZH_MONTH_DAY.format("m2", "d2", "y2"))
ISO_PERIOD = re.compile(r"\b(\d{4}-\d{2}-\d{2})" + _UNTIL + r"(\d{4}-\d{2}-\d{2})\b")
MONTHLY_WEEKDAY = re.compile(
    r"\b(?P<n>first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last)\s+"
    r"(?P<day>monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\s+(?:of|in)\s+(?:each|every|the|a)\s+month\b"
    # "每月第二个星期三", "每个月的最后一个周五"
    r"|每个?月的?(?:第(?P<zn>[一二三四五1-5])个|(?P<zlast>最后一)个)(?:星期|周|礼拜)(?P<zday>[一二三四五六日天])",
    re.I)
MONTHLY_DAY = re.compile(r"\b(?:by|on|before|until|no later than)\s+the\s+(?P<d>\d{1,2})(?:st|nd|rd|th)\b"
                         # "每月15日前", "每个月的十五号"
                         r"|每个?月的?(?P<zd>\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])\s*[日号]",
                         re.I)
MONTHLY = re.compile(r"\b(?:each|every|a|per|the)\s+month\b|\bmonthly\b|每个?月", re.I)
# A date without a year ("Sep 1: **DEADLINE** - All manager promotion nominations must be
# submitted"), or days of one month ("Aug 18-29: Managers review …"), never a part of a period,
# nor in a sentence that writes a year (encyclopedic text dates its events). English only: Chinese
# news leaves the year to the dateline ("3月5日，……"), so a Chinese date without one is not read.
EVENT = re.compile(r"\b" + MONTH.format("m") + r"\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?"
                   r"(?:\s*[-–]\s*(?P<d2>\d{1,2})(?:st|nd|rd|th)?)?(?!\s*[-–:]?\s*\d)(?:,?\s+(?P<y>" + YEAR + r"))?\b", re.I)
# A date in an example ("For example, if the change is processed on June 15, …") happens to no one.
HYPOTHETICAL = re.compile(r"\b(?:for example|for instance|e\.g\.|suppose|imagine)\b|(?:^|[.!?]\s+)if\b", re.I | re.M)
WRITTEN_YEAR = re.compile(rf"(?<!\d){YEAR}(?!\d)")

# -- what a question asks: a date, read relative to the day it is asked ------------------------
DUE = re.compile(r"\bdue\b", re.I)  # asks a date too, beyond what the abstention gate reads as "when"
MONTH_OFFSET = re.compile(r"\b(?P<which>last|previous|this|current|next|coming)\s+month\b|(?P<zh>上个?|本|这个|下个?)月")
YEAR_OFFSET = re.compile(r"\b(?P<which>last|previous|this|current|next|coming)\s+(?:calendar\s+)?year\b"
                         r"|(?P<zh>去|今|本|明)年", re.I)
EARLIER = frozenset({"last", "previous", "上", "上个", "去"})
LATER = frozenset({"next", "coming", "下", "下个", "明"})
EDGE_END = re.compile(r"\b(?:end(?:s|ed)?|expir(?:e|es|ed|y)|conclud(?:e|es|ed)|clos(?:e|es|ed)|latest|"
                      r"last day|deadline|due|until|by (?:what|which) (?:date|day)|by when)\b"
                      r"|截止|截至|结束|到期|最后一天|为止", re.I)
EDGE_START = re.compile(r"\b(?:begin|began|begun|begins|start(?:s|ed)?|open(?:s|ed)?|first day)\b|开始|起始|第一天",
                        re.I)
PREVIOUS = re.compile(r"\b(?:previous|prior|preceding|most recent|last)\b|上一次|上次|上一个|最近一次", re.I)
NEXT = re.compile(r"\b(?:next|upcoming|coming)\b|下一次|下次|下一个|即将", re.I)
CURRENT = re.compile(r"\b(?:current(?:ly)?|now|ongoing|today|this\s+(?:fiscal\s+|calendar\s+)?(?:week|month|quarter|"
                     r"half|year|period|cycle|season|term|semester))\b"  # not "this composer"
                     r"|目前|当前|现在|今天|本(?:周|季度|财季|财年|年度|期)|这个(?:季度|周)", re.I)
# Words that tie the question to the day it is asked. "The last Boston coworking" may be the
# latest one or the final one ever: without such a word only a recurring rule is read.
NOW = re.compile(r"\b(?:today|now|current(?:ly)?|next|upcoming|previous|most recent)\b"
                 r"|今天|现在|目前|当前|下一次|下次|上一次|上次|最近一次", re.I)
# Words of the question that only say when (they are no topic a rule's sentence should share).
WHEN_WORDS = re.compile(r"\b(?:last|latest|previous|prior|next|upcoming|current(?:ly)?|this|today|month|date|"
                        r"day|when|deadline)\b"
                        rf"|{alternatives(WHEN_WORDS_ZH)}|上一?次|下一?次|最近一次|[上下本这]个?月|今天|目前|当前", re.I)
LENGTHS = {"week": (6, 8), "month": (27, 32), "quarter": (88, 93), "half": (180, 185), "year": (364, 367)}
# Chinese: only the unambiguous nouns ("月" is in every "每月").
_ZH_PERIODS = {"季度": "quarter", "财季": "quarter", "半年": "half", "财年": "year", "年度": "year"}
PERIOD_NOUN = re.compile(r"(?<![-\w])(week|month|quarter|half|year)(?:ly|s)?\b|(季度|财季|半年|财年|年度)", re.I)


def period_length(noun: re.Match[str]) -> tuple[int, int]:
    """Days a period named by a ``PERIOD_NOUN`` match lasts."""
    return LENGTHS[(noun.group(1) or _ZH_PERIODS[noun.group(2)]).lower()]
