"""Dates worked out for the day a question is asked from a rule the documents state ("second
Wednesday of each month", "by the 15th", "Q4: November 1 through January 31"), through
ingestion, the real retrieval pipeline and the extractive answerer — and, with an LLM, said in
its prompt."""

from __future__ import annotations

import datetime as dt

import pytest

from kgrag.generate.extractive.dates_for_today import date_asked
from tests.conftest import extractive_answer, pages_fixture

PAGES = {
    "locations.md": "# Location channels\n\n| Channel | Purpose |\n| --- | --- |\n"
                    "| #loc_boston | For folks around Boston; a monthly coworking event in downtown Boston, held the "
                    "second Wednesday of each month. |\n"
                    "| #loc_berlin | The Berlin meetup channel. We are regularly meeting up on the 3rd Thursday "
                    "of the Month. |\n",
    "fiscal.md": "# Fiscal year\n\nOur fiscal year runs from February 1 to January 31.\n\n"
                 "- Q1: February 1 through April 30\n- Q2: May 1 through July 31\n"
                 "- Q3: August 1 through October 31\n- Q4: November 1 through January 31\n",
    "invoices.md": "# Contractor invoices\n\nContractors submit their monthly salary invoice through the form by the "
                   "8th of each month.\n\nContractors from Italy and Ukraine send their monthly invoice by the 15th "
                   "to payroll.",
    "chairs.md": "# Board chairs\n\nJane Doe chaired the board from March 4, 2019 to June 30, 2023.",
    "promotions.md": "# Promotion cycle FY26-Q4 (Nov 1)\n\nBelow are the dates for the FY26-Q4 promotion cycle:\n\n"
                     "- Aug 1-15: Team members prepare & submit their promotion document\n"
                     "- Sep 1: **DEADLINE** - All manager promotion nominations must be submitted in Workday\n"
                     "- Nov 1: Promotions go live!\n",
    "payroll.md": "# Payroll cut-off\n\nFor example, if a change is processed on June 15, it moves to the next fiscal "
                  "pay period. The start of that fiscal period is June 21.",
    "board.md": "# Board elections\n\nThe current chair of the board was re-elected on May 2 at the 2021 meeting.",
    "equipment.md": "# Home office refresh\n\nThe equipment refresh allowance is yearly. It resets at the beginning "
                    "of each calendar year (January 1 to December 31).",
}
TUESDAY = dt.date(2025, 11, 11)


kb = pages_fixture(PAGES)
ZH_PAGES = {
    "聚会.md": "# 北京同城频道\n\n北京的同事每月第二个星期三在国贸办公室举行线下聚会。\n",
    "发票.md": "# 外包发票\n\n外包人员须在每月15日前提交当月的服务发票。\n",
    "财年.md": "# 财年与季度\n\n公司的财年从2月1日开始。\n\n- 第三季度：8月1日至10月31日\n- 第四季度：11月1日至1月31日\n",
}
zh_kb = pages_fixture(ZH_PAGES)


def _dated(kb, question: str, today: dt.date = TUESDAY):
    answer = kb.generator.on(today).answer_to(question, kb.retriever.retrieve(question))
    assert answer.mode == "extractive" and not answer.unsupported_sentences and not answer.invalid_citations
    return answer


@pytest.mark.parametrize(("question", "date", "rule"), [
    ("What is the date of the next monthly coworking event in downtown Boston?", "2025-11-12",
     "second Wednesday of each month"),
    ("When was the last Boston coworking event held?", "2025-10-08", "second Wednesday of each month"),
    ("What was the date of the Berlin meetup that occurred last month?", "2025-10-16", "3rd Thursday of the Month"),
    ("When did the current fiscal quarter begin?", "2025-11-01", "November 1 through January 31"),
    ("What is the end date of the current fiscal quarter?", "2026-01-31", "November 1 through January 31"),
    ("What was the last day of the previous fiscal quarter?", "2025-10-31", "August 1 through October 31"),
    ("What was the deadline last month for contractors from Italy to send their monthly invoice?", "2025-10-15",
     "by the 15th"),
    ("By what date must a contractor who started today submit their first monthly salary invoice?", "2025-12-08",
     "by the 8th"),
    ("When does the current yearly equipment refresh allowance expire?", "2025-12-31", "January 1 to December 31"),
])
def test_a_date_is_worked_out_for_today_from_the_rule_quoted(kb, question, date, rule):
    answer = _dated(kb, question)
    weekday = dt.date.fromisoformat(date).strftime("%A")
    assert answer.text.startswith(f"{date} ({weekday}), worked out for today (2025-11-11) from ["), answer.text
    assert answer.worked_out is not None and answer.worked_out["rule"] == rule
    cited = {c.n: c for c in answer.citations}[answer.worked_out["source"]]
    assert rule in cited.snippet  # the sentence stating the rule is the one quoted and cited


def test_the_occurrence_counts_from_the_day_asked(kb):
    question = "What is the date of the next monthly coworking event in downtown Boston?"
    assert _dated(kb, question, dt.date(2025, 11, 12)).worked_out["date"] == "2025-11-12"  # today is the day
    assert _dated(kb, question, dt.date(2025, 11, 13)).worked_out["date"] == "2025-12-10"
    assert _dated(kb, "When did the current fiscal quarter begin?", dt.date(2026, 3, 2)).worked_out["date"] == \
        "2026-02-01"
    # A period running over New Year: in January the current Q4 began the year before.
    assert _dated(kb, "When did the current fiscal quarter begin?", dt.date(2026, 1, 15)).worked_out["date"] == \
        "2025-11-01"
    # The second Wednesday of January 2026 is the 14th; the next one from the 15th is in February.
    question = "What is the date of the next monthly coworking event in downtown Boston?"
    assert _dated(kb, question, dt.date(2026, 1, 15)).worked_out["date"] == "2026-02-11"


def test_no_date_is_worked_out_without_a_day_to_count_from(kb):
    # "first" and "last" alone name no day: the first coworking ever is no rule's to give.
    answer = extractive_answer(kb, "When was the first Boston coworking event held?")
    assert answer.worked_out is None and not answer.text[:4].isdigit()
    assert extractive_answer(kb, "When does the fiscal year begin?").worked_out is None
    # A period that does not recur is read only for a question naming today ("current", "next").
    assert extractive_answer(kb, "When did the last chair of the board step down?").worked_out is None


@pytest.mark.parametrize(("question", "date", "said"), [
    ("What was the deadline for managers to submit promotion nominations for the promotion cycle that became "
     "effective at the start of this month?", "2025-09-01", "Sep 1"),
    ("When is the next deadline for managers to submit their promotion nominations?", "2026-09-01", "Sep 1"),
    ("By what date did team members have to submit their promotion document for the current cycle?", "2025-08-15",
     "Aug 1-15"),
])
def test_a_date_written_without_a_year_is_dated_for_today(kb, question, date, said):
    """A timeline ("Sep 1: DEADLINE - …") writes no year: the one meant is the nearest to the
    day asked (or the next, the last one), of a range of days its last when a deadline is asked."""
    answer = _dated(kb, question)
    assert answer.text.startswith(f"{date} ("), answer.text
    assert answer.worked_out is not None and answer.worked_out["rule"] == said
    # A date in an example is nobody's: the period stated as a rule answers.
    assert _dated(kb, "What is the start date of the fiscal period that we are currently in?").worked_out["date"] == \
        "2025-11-01"
    # A sentence that writes a year dates its own events: nothing is worked out from it.
    assert extractive_answer(kb, "When was the current chair of the board re-elected?").worked_out is None


@pytest.mark.parametrize(("question", "date", "rule"), [
    ("北京的下一次线下聚会是哪天？", "2025-11-12", "每月第二个星期三"),
    ("上个月北京线下聚会是哪天？", "2025-10-08", "每月第二个星期三"),
    ("上个月外包人员提交服务发票的截止日期是几号？", "2025-10-15", "每月15日"),
    ("公司这个季度什么时候结束？", "2026-01-31", "11月1日至1月31日"),
    ("当前这个季度什么时候结束？", "2026-01-31", "11月1日至1月31日"),  # 当前, 结束: no missed words
    ("上一个季度是什么时候开始的？", "2025-08-01", "8月1日至10月31日"),
])
def test_a_chinese_rule_gives_the_date_for_today(zh_kb, question, date, rule):
    answer = _dated(zh_kb, question)
    assert answer.text.startswith(f"{date} ("), answer.text
    assert answer.worked_out is not None and answer.worked_out["rule"] == rule


def test_february_29_without_a_year_is_dated_in_a_leap_year():
    from kgrag.generate.extractive.dates_for_today import DateAsked, _event_date

    on = dt.date(2026, 6, 1)  # 2025, 2026 and 2027 are common years
    asked = {d: DateAsked(d, True, None, None, None, None) for d in ("previous", "next", "current")}
    assert _event_date((2, 29, 29), asked["previous"], on) == dt.date(2024, 2, 29)
    assert _event_date((2, 29, 29), asked["next"], on) == dt.date(2028, 2, 29)
    assert _event_date((2, 29, 29), asked["current"], on) == dt.date(2028, 2, 29)  # the nearer one
    assert _event_date((9, 1, 1), asked["current"], on) == dt.date(2026, 9, 1)


def test_how_a_question_reads_its_day():
    asked = date_asked("What was the end date of the fiscal quarter that concluded last month?")
    assert asked is not None and (asked.direction, asked.month, asked.edge, asked.length) == \
        ("current", -1, "end", (88, 93))
    asked = date_asked("What is the end date for conducting Mid-Year check-in conversations this year?")
    assert asked is not None and (asked.year, asked.edge, asked.length) == (0, "end", None)
    asked = date_asked("When was the last Boston coworking event held?")
    assert asked is not None and (asked.direction, asked.anchored) == ("previous", False)
    assert date_asked("When did the next winter Olympics open?") is not None
    assert date_asked("What is the birth date of this American composer?") is None  # "this" names no period
    assert date_asked("Who directed the last film of the trilogy?") is None  # asks no date
    assert date_asked("When was Hamlet written?") is None
    asked = date_asked("上个月外包发票的截止日期是几号？")
    assert asked is not None and (asked.direction, asked.month, asked.edge) == ("current", -1, "end")
    asked = date_asked("本季度什么时候开始？")
    assert asked is not None and (asked.direction, asked.edge, asked.length) == ("current", "start", (88, 93))
    assert date_asked("北京的线下聚会在哪里举行？") is None  # asks a place
    assert date_asked("哈姆雷特是什么时候写的？") is None  # no day to count from


def test_an_llm_is_told_the_date_worked_out(kb):
    from kgrag.config import LLMSettings
    from kgrag.generate.generator import Generator
    from tests.chat_server import chat_server

    question = "What is the date of the next monthly coworking event in downtown Boston?"
    with chat_server(lambda body: "It is on 2025-11-12 [1].") as server:
        settings = LLMSettings(**server.settings().model_dump(exclude={"today"}), today=TUESDAY)
        answer = Generator(settings).answer_to(question, kb.retriever.retrieve(question))
        prompt = server.requests[-1]["messages"][-1]["content"]
    assert answer.mode == "llm"
    assert "Today is 2025-11-11 (Tuesday). By the rule \"second Wednesday of each month\" in source [" in prompt
    assert "the date asked is 2025-11-12 (Wednesday)." in prompt
