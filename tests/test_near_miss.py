"""Near misses: a question sharing the knowledge base's words and subject but asking what it never
states (issue 43). The demo's permission guide says, in Chinese, that every tenant keeps *at least*
one administrator and that a custom role's name is *at most* 64 characters long; asked in English
for the other bound, or "how many" where the sentence close in meaning holds no number, kgrag
declines rather than quote it. Each fails without ``asks.could_answer`` in the gate's and the
answerer's reading of other-script sentences (both quoted or vouched for before)."""

from __future__ import annotations

import pytest

from kgrag.text.asks import asks_value, bound_asked, could_answer, states_other_bound


@pytest.mark.parametrize("question", [
    "How many administrators can a tenant have at most?",  # the guide: at least one
    "What is the minimum length of a custom role name?",  # the guide: at most 64 characters
])
def test_a_near_miss_question_abstains(demo_kb, question):
    result = demo_kb.retriever.retrieve(question)
    assert result.below_threshold, result.gate
    answer = demo_kb.generator.answer_to(question, result)
    assert answer.abstained and not answer.citations, answer.text


def test_the_bound_that_is_stated_is_answered(demo_kb):
    """The same subjects asked for the bound the guide states pass and quote it."""
    role = "What is the maximum length of a custom role name?"
    answer = demo_kb.generator.answer_to(role, demo_kb.retriever.retrieve(role))
    assert not answer.abstained and "不超过 64 个字符" in answer.text, answer.text
    admins = "How many administrators must a tenant have?"
    answer = demo_kb.generator.answer_to(admins, demo_kb.retriever.retrieve(admins))
    # was "The two roles are mutually exclusive…": an English line holding no count
    assert not answer.abstained and "至少保留一名管理员" in answer.text, answer.text


def test_a_sentence_could_answer_by_the_value_and_bound_it_holds():
    assert bound_asked("How many administrators can a tenant have at most?") == "upper"
    assert bound_asked("租户至少要有几名管理员？") == "lower"
    assert bound_asked("How many administrators are there?") is None
    assert states_other_bound("upper", "每个租户至少保留一名管理员。")
    assert not states_other_bound("lower", "每个租户至少保留一名管理员。")
    assert not could_answer("How many administrators can a tenant have at most?", "每个租户至少保留一名管理员。")
    assert could_answer("How many administrators must a tenant have?", "每个租户至少保留一名管理员。")  # 一名: a count
    assert not could_answer("How many administrators must a tenant have?", "管理员拥有全部权限，可以创建和删除用户。")
    assert could_answer("How long is the Guangzhou–Maoming railway?", "广茂铁路全长364.6公里。")  # a length, not a time
    assert could_answer("Who founded the company?", "The company was founded in 1998.")  # not a value kind: any


@pytest.mark.parametrize("question, value", [
    ("How old was John Elway when he played in Super Bowl XXXIII?", True),
    ("When did the railway open?", True),
    ("神秘博士多久独自旅行一次？", True),
    ("南非学校法案是哪一年通过的?", True),
    ("What happens to the norm when a number is multiplied by p?", False),  # asks what
    ("When imperialism impacts social norms of a state, what is it called?", False),
    ("神秘博士的哪个敌人也是时间领主？", False),  # 时间领主: Time Lord, a name
])
def test_a_value_is_asked_by_its_interrogative(question, value):
    assert asks_value(question) is value


def test_a_value_is_held_by_a_number_a_count_or_a_frequency():
    assert could_answer("How old was John Elway then?", "他在 38岁时带领野马队赢得第 33 届超级碗。")
    assert could_answer("神秘博士多久独自旅行一次？", "The Doctor rarely travels alone.")
    assert not could_answer("How old was John Elway then?", "约翰·埃尔维目前担任丹佛的总经理。")
