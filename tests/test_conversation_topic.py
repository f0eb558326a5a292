"""Conversations that keep their topic (kgrag/retrieve/followup.py, Completion.for_generation),
through the one asking seam on the demo knowledge base with the shipped models: the subject
carries across turns (a pronoun, an ellipsis, a switch to a sibling), a new topic is not merged,
and ``trace.conversation`` says what was carried."""

from __future__ import annotations

from kgrag.asking import AskRequest
from kgrag.retrieve.followup import complete
from kgrag.types import Turn


def _converse(kb, questions: list[str]) -> list[dict]:
    """Each question asked after the ones before it (with their answers), as a client sends the
    history; the response bodies."""
    history: list[Turn] = []
    bodies = []
    for question in questions:
        asked = kb.asking.ask(AskRequest(question, history=tuple(history)))
        assert asked.answer is not None
        history.append(Turn(question, asked.answer.text, tuple(c.chunk_id for c in asked.answer.citations)))
        bodies.append(asked.body)
    return bodies


def _titles(body: dict) -> set[str]:
    return {c["title"] for c in body["citations"]}


def _first_title(body: dict) -> str:
    """The page the answer's first sentence cites (further sentences are the answer's business:
    issue 43's filler rule, not the conversation's)."""
    return body["citations"][0]["title"]


def test_the_subject_carries_through_a_pronoun_and_an_ellipsis(demo_kb):
    """"Who directed Black Book?" → "When did it premiere?" → "Where?": the third turn still
    asks about the film (it had answered about a footballer: the chain lost its subject)."""
    _, when, where = _converse(demo_kb, ["Who directed Black Book?", "When did it premiere?", "Where?"])
    assert "1 September 2006" in when["answer"] and "Black Book (film)" in _titles(when)
    conversation = where["trace"]["conversation"]
    assert conversation["followup"] and conversation["subject"] == ["Black Book"]
    assert conversation["standalone_question"] == "Where did Black Book premiere?"
    assert "Venice Film Festival" in where["answer"] and _first_title(where) == "Black Book (film)"


def test_a_switch_to_a_sibling_then_a_pronoun_then_an_ellipsis(demo_kb):
    """"审计员呢？" after a question about the 管理员 asks the same of the 审计员; "他们" then
    means the 审计员; "怎么求？" after "最近公共祖先是什么？" asks how, not what, again."""
    _, auditor, modify = _converse(demo_kb, ["管理员有哪些权限？", "审计员呢？", "他们能修改数据吗？"])
    switched = auditor["trace"]["conversation"]
    assert switched["switched"] == {"from": "管理员", "to": "审计员"}
    assert switched["standalone_question"] == "审计员有哪些权限？"
    assert "只读权限" in auditor["answer"] and "拥有全部权限" not in auditor["answer"]
    assert modify["trace"]["conversation"]["standalone_question"] == "审计员能修改数据吗？"
    assert "不能修改任何数据" in modify["answer"]

    definition, how, uses = _converse(demo_kb, ["最近公共祖先是什么？", "怎么求？", "有什么应用？"])
    assert "深度最大" in definition["answer"]
    assert how["trace"]["conversation"]["standalone_question"] == "最近公共祖先怎么求？"
    assert "倍增" in how["answer"] and "深度最大" not in how["answer"]
    # Chinese drops the subject: "有什么应用？" asks what the 最近公共祖先 has (it had answered
    # from a Black Book page as a new topic); the sentence under "## 应用" answers it.
    carried = uses["trace"]["conversation"]
    assert carried["followup"] and carried["standalone_question"] == "最近公共祖先有什么应用？", carried
    assert "树上两点之间的距离" in uses["answer"] and _first_title(uses) == "最近公共祖先", uses["answer"]


def test_a_new_topic_is_recognised_and_not_merged(demo_kb):
    """A question naming its own subject starts a new topic: searched as asked, nothing
    carried; the pronoun after it means the new subject, not the old one."""
    *_, founded, founder = _converse(demo_kb, ["Who directed Black Book?", "When did it premiere?",
                                               "When was Moscow State University founded?", "Who founded it?"])
    new = founded["trace"]["conversation"]
    assert not new["followup"] and new["new_topic"] and new["carried_from"] == []
    assert new["completed_question"] == "When was Moscow State University founded?"
    assert "1755" in founded["answer"] and _first_title(founded) == "Moscow State University"
    assert founder["trace"]["conversation"]["standalone_question"] == "Who founded Moscow State University?"
    assert "Lomonosov" in founder["answer"] and "Black Book" not in founder["answer"]


def test_the_readmes_follow_up_answers_from_the_right_page(demo_kb):
    """README: "Which manuscripts are the Books of Clanranald?" → "And who kept them?"."""
    _, kept = _converse(demo_kb, ["Which manuscripts are the Books of Clanranald?", "And who kept them?"])
    assert kept["trace"]["conversation"]["standalone_question"] == "Who kept Books of Clanranald?"
    assert kept["citations"] and _titles(kept) == {"Books of Clanranald"}


def test_a_chain_read_without_a_linker_keeps_its_subject():
    """The rule alone (no store): each earlier turn is read as it was asked."""
    history = [Turn("Who directed Black Book?"), Turn("When did it premiere?")]
    c = complete("Where?", history, [])
    assert c.followup and c.subject == ["Black Book"] and c.standalone == "Where did Black Book premiere?"
    assert c.carried_from == ["Who directed Black Book?", "When did it premiere?"]
    cfo = complete("And for the CFO?", [Turn("What is the Slack channel for the CEO?")], [])
    assert cfo.switched == ("CEO", "CFO") and cfo.for_generation == "What is the Slack channel for the CFO?"
    other = complete("What is the parental leave policy?", [Turn("Who directed Black Book?")], [])
    assert not other.followup and other.new_topic
