"""Passages written mainly in one script with lines in the other: the demo's permission guide is
Chinese with English sentences ("A rotated key stays valid for 24 hours …", "This guide applies
to Acme Portal version 3.2 and later."). An English question answered by such a line is
answered in its words, with the shipped models on the bundled demo. Each test fails without its
part: the gate's word coverage reading the first hits whatever their script
(``abstain.assess``), an own-script sentence of an other-script passage vouching for it
(``abstain._stated_in_own_script``), and the answerer keeping to an own-script sentence that
holds the question's words (``best_sentences``: ``ACROSS_LANGUAGES.words_say_it``), and the
answerer weighing a Chinese sentence of a mostly English passage by meaning (``_by_meaning``)."""

from __future__ import annotations

from kgrag.retrieve.abstain import GateSettings, assess
from kgrag.retrieve.types import Hit, PathRank
from kgrag.text.asks import asks_for_code
from kgrag.types import Chunk

GUIDE = ("本指南说明 Acme Portal 的用户权限模型。系统中的每一个操作都需要相应的权限。权限不直接授予用户，而是授予角色，"
         "再把角色分配给用户。预置角色不能删除，但可以复制后修改。")
VERSION_LINE = "This guide applies to Acme Portal version 3.2 and later."


def _hit(text: str) -> Hit:
    chunk = Chunk(id="guide#c0", doc_id="guide", text=text, title="用户权限管理指南", section_path="", start=0,
                  end=len(text))
    return Hit(chunk, 1.0, paths={"dense": PathRank(1, 0.76)})


def _ask(demo_kb, question: str):
    return demo_kb.generator.answer_to(question, demo_kb.retriever.retrieve(question))


def test_an_english_line_of_a_chinese_guide_answers_an_english_question(demo_kb):
    rotated = _ask(demo_kb, "How long does a rotated API key stay valid?")
    assert not rotated.abstained and "24 hours" in rotated.text, rotated.text
    assert rotated.citations[0].source.endswith("permission_guide.md")
    version = _ask(demo_kb, "Which version of Acme Portal does the guide apply to?")
    assert not version.abstained and "version 3.2" in version.text, version.text


def test_an_own_script_sentence_of_an_other_script_passage_vouches_for_it():
    question = "Which version of Acme Portal does the guide apply to?"
    weak = lambda enough: 0.70  # noqa: E731 - no other-script sentence means what it asks
    with_line = _hit(GUIDE + VERSION_LINE)
    passed = assess(question, [with_line], [], GateSettings(), meaning=weak)
    assert passed.across and not passed.abstain, passed
    # Without the line, the Chinese sentences must vouch by meaning, and do not.
    assert assess(question, [_hit(GUIDE)], [], GateSettings(), meaning=weak).abstain
    # The line names Acme Portal but not what this question asks (its price): no vouching.
    cost = assess("How much does Acme Portal cost?", [with_line], [], GateSettings(), meaning=weak)
    assert cost.abstain and cost.reason == "weak match with a hit in another script", cost


def test_the_gates_word_coverage_reads_an_other_script_passages_own_script_lines():
    """The best hit is an English code listing (weak dense match), the second the Chinese guide
    whose English line answers: its words count for the question's coverage."""
    question = "How long does a rotated API key stay valid?"
    code = Chunk(id="api#c0", doc_id="api", text="POST /api/v1/users/{id}/roles with a bearer token; timeout=10.",
                 title="API", section_path="", start=0, end=62)
    listing = Hit(code, 1.0, paths={"dense": PathRank(1, 0.23, calibrated=0.23)})
    line = "Administrators can also rotate API keys. A rotated key stays valid for 24 hours."
    out = assess(question, [listing, _hit(GUIDE + line)], [], GateSettings(), meaning=lambda enough: 0.70)
    assert not out.across and not out.abstain and out.coverage >= 0.8, out
    assert assess(question, [listing, _hit(GUIDE)], [], GateSettings(), meaning=lambda enough: 0.70).abstain


def test_a_status_code_is_a_value_not_code(demo_kb):
    assert not asks_for_code("What status code does the role API return on success?")
    assert not asks_for_code("Which error code is returned for a missing role?")
    assert asks_for_code("Show me the code that assigns a role") and asks_for_code("How do I call the API?")
    answer = _ask(demo_kb, "What status code does the role API return on success?")
    assert "requests.post" not in answer.text and "raise_for_status" not in answer.text, answer.text


def test_an_own_script_sentence_holding_the_question_is_not_outweighed_by_meaning(demo_kb):
    answer = _ask(demo_kb, "Can a user be both an Administrator and an Auditor?")
    assert not answer.abstained and "mutually exclusive" in answer.text, answer.text
    # One word of the question in an English sentence says nothing: the Chinese one answers.
    member = _ask(demo_kb, "What can a Member do?")
    assert "只能查看和编辑自己创建的资源" in member.text, member.text


def test_an_other_script_sentence_of_a_mostly_own_script_passage_is_weighed_by_meaning(demo_kb):
    """The guide's FAQ pairs a Chinese question and answer with an English one, in a passage
    written mostly in English: its Chinese answer is weighed by meaning for an English question
    as the gate weighs it, and quoted, not a footballer's page the translation found first."""
    answer = _ask(demo_kb, "What happens when an employee leaves the company?")
    assert not answer.abstained and "先禁用账号" in answer.text, answer.text
    assert "张世昌" not in answer.text and answer.citations[0].source.endswith("permission_guide.md")


def test_what_an_acronym_stands_for_is_the_sentence_that_spells_it_out(demo_kb):
    """"What does RBAC stand for?" was declined (the guide's opening is Chinese, its words are
    none of the question's), and "RBAC 的全称是什么？" quoted a Gaelic manuscript's page by
    meaning: the sentence writing RBAC beside the words whose initials spell it answers both."""
    from kgrag.text.asks import asked_acronyms, spells_out

    assert asked_acronyms("What does RBAC stand for?") == ["RBAC"] and asked_acronyms("RBAC 的全称是什么？") == ["RBAC"]
    assert asked_acronyms("In MEDDPPICC, what does the 'E' stand for?") == []  # one letter: kgrag.retrieve.acronyms
    assert asked_acronyms("Who administers RBAC?") == []
    opening = "本指南说明 Acme Portal 的用户权限模型（Role-Based Access Control，简称 RBAC）。"
    assert spells_out("RBAC", opening) and not spells_out("RBAC", "RBAC 是一种权限模型。")
    assert spells_out("CISO", "the Chief Information Security Officer (CISO)") and not spells_out("API", opening)
    weak = lambda enough: 0.70  # noqa: E731
    assert not assess("What does RBAC stand for?", [_hit(opening + GUIDE)], [], GateSettings(), meaning=weak).abstain
    assert assess("What does RBAC stand for?", [_hit("RBAC 是一种权限模型。" + GUIDE)], [], GateSettings(),
                  meaning=weak).abstain
    for question in ("What does RBAC stand for?", "RBAC 的全称是什么？"):
        answer = _ask(demo_kb, question)
        assert not answer.abstained and "Role-Based Access Control" in answer.text, (question, answer.text)
