"""The abstention gate (kgrag/retrieve/abstain.py): its rules on their own, and the issue's
questions through the real pipeline on the demo knowledge base."""

from __future__ import annotations

import pytest

from kgrag.retrieve.abstain import _inflection_found as found
from kgrag.retrieve.abstain import content_words, question_names, word_coverage
from kgrag.retrieve.types import LinkedEntity


def test_word_forms_match_inflections_not_derived_words():
    assert found("capital", {"capitals"}) and found("studies", {"study"}) and found("founded", {"founding"})
    assert not found("capital", {"capitalisme"}) and not found("capital", {"capitalism", "capitalize"})


def test_names_are_linked_surfaces_and_capitalised_words_but_not_nationalities():
    linked = [LinkedEntity("Black Book", "black book", "Black Book", "exact"),
              LinkedEntity("Blak Boook", "x", "X", "fuzzy")]
    names = question_names("Which American actress in the film Black Book was born in Canberra?", linked)
    assert names == ["Black Book", "Canberra"]


def test_a_multi_word_name_must_stand_together_in_one_hit():
    from kgrag.config import RetrievalSettings
    from kgrag.retrieve.abstain import assess, gate_settings
    from kgrag.retrieve.types import Hit
    from kgrag.types import Chunk

    question = "Who is Landgravine Marie Louise of Hesse-Kassel's maternal grandfather?"
    assert "Landgravine Marie Louise of Hesse-Kassel" in question_names(question, [])
    pages = {"Marie of Hesse-Kassel": "Landgravine Marie of Hesse-Kassel was the consort of a grand duke.",
             "Louise of Prussia": "Louise was a princess whose maternal grandfather was a king."}
    scattered = [Hit(Chunk(id=t, doc_id=t, text=x, title=t, start=0, end=len(x)), 1.0) for t, x in pages.items()]
    gate = assess(question, scattered, [], gate_settings(RetrievalSettings()))
    assert gate.abstain and gate.missing_names == ["Landgravine Marie Louise of Hesse-Kassel"]
    text = "Landgravine Marie Louise of Hesse-Kassel was a daughter of Charles I; her maternal grandfather was a duke."
    together = [Hit(Chunk(id="m", doc_id="m", text=text, title="Marie Louise", start=0, end=len(text)), 1.0)]
    assert not assess(question, together, [], gate_settings(RetrievalSettings())).abstain


def test_a_linked_nationality_is_no_name():
    linked = [LinkedEntity("French", "french", "French", "exact"), LinkedEntity("Jacques Feyder", "jf", "Jacques Feyder",
                                                                              "exact")]
    assert question_names("Was Jacques Feyder French?", linked) == ["Jacques Feyder"]
    assert question_names("Are both Jim McBride and Neil Jordan American?", [])[-2:] == ["Jim McBride", "Neil Jordan"]


def test_a_chinese_surface_inside_a_word_is_no_name():
    # "候传" is a substring of "时候传入", not a word of the question.
    linked = [LinkedEntity("候传", "k", "候传", "exact"), LinkedEntity("日本", "j", "日本", "exact")]
    assert question_names("狭义的唐音是什么时候传入日本的？", linked) == ["日本"]


def test_chinese_function_words_are_no_content_words():
    assert content_words("Acme Portal 的数据库多久备份一次？") == {"acme", "portal", "数据库", "备份"}


def test_word_coverage_of_chinese_words_is_by_substring():
    from kgrag.retrieve.abstain import _Read
    from kgrag.retrieve.types import Hit
    from kgrag.types import Chunk

    chunk = Chunk(id="c", doc_id="d", text="《战国无双3》是由光荣和ω-force开发的。", start=0, end=20, title="战国无双3")
    assert word_coverage("战国无双3是由谁开发的？", [_Read(Hit(chunk, 1.0))]) == 1.0
    assert word_coverage("战国无双3是哪个公司开发的？", [_Read(Hit(chunk, 1.0))]) < 1.0  # 公司 is not there


@pytest.mark.parametrize("question", [
    "What is the capital of Australia?",  # "Capitalisme" is no support, "Australia" is nowhere
    "Acme Portal 的数据库多久备份一次？",  # the guide says nothing of backups
])
def test_unanswerable_demo_questions_abstain(demo_kb, question):
    result = demo_kb.retriever.retrieve(question)
    assert result.below_threshold and result.gate["abstain"] and result.gate["reason"]
    answer = demo_kb.generator.answer(question, result.hits, abstain=result.below_threshold)
    assert answer.abstained and not answer.citations


@pytest.mark.parametrize("question", [
    "What is the LCA of two nodes in a tree?",
    "最近公共祖先是什么？",
    "Who founded the university where Sergei Aleksandrovich Tokarev was a professor?",
    "Which actress in the film Black Book was born in 1975?",
])
def test_answerable_demo_questions_pass_the_gate(demo_kb, question):
    result = demo_kb.retriever.retrieve(question)
    assert not result.below_threshold, result.gate
