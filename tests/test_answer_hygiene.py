"""Answer hygiene: a plain-text heading (a line standing above its paragraph in text read from a
PDF) is never quoted as part of its sentence (kgrag/text/sentences.py). Through the real
pipeline (shipped embedder and recognizer) on a page read like a PDF's text, then the sentence
reader alone. Code lines: tests/test_across_languages.py. A namesake page appended as a second
hop, and a hop drawn by the asked kind alone leading the answer, on the demo."""

from __future__ import annotations

import pytest

from kgrag.text.sentences import split_sentences
from tests.conftest import extractive_answer, pages_fixture

PDF_LIKE = {
    "travel.txt": (
        "Travel Handbook\n"
        "3.2 Travel Policy\n"
        "Employees must book business travel through the travel portal at least 14 days ahead.\n"
        "Economy class is the default for flights under six hours.\n"
        "3.3 Meal Allowance\n"
        "The daily meal allowance abroad is 60 euros.\n"
    ),
}
travel_kb = pages_fixture(PDF_LIKE)


def test_a_heading_line_is_not_quoted_with_its_sentence(travel_kb):
    """Text read from a PDF keeps a heading on its own line above its paragraph: it had been
    quoted as the start of the paragraph's first sentence ("3.2 Travel Policy Employees must …")."""
    answer = extractive_answer(travel_kb, "How far ahead must employees book business travel?")
    assert "14 days ahead" in answer.text
    assert "Travel Policy" not in answer.text and "Travel Handbook" not in answer.text
    assert answer.text.startswith("Employees must book")
    answer = extractive_answer(travel_kb, "How much is the daily meal allowance abroad?")
    assert answer.text.startswith("The daily meal allowance abroad is 60 euros")


def test_plain_text_headings_are_told_from_wrapped_lines():
    text = ("3.2 Travel Policy\nEmployees must book travel.\nThe policy applies to\nGermany and France.\n"
            "\n第三章 差旅\n员工须提前预订。\n短行\n也是正文。\n")
    sentences = [(s.text, s.heading) for s in split_sentences(text)]
    assert sentences == [
        ("3.2 Travel Policy", True), ("Employees must book travel.", False),
        ("The policy applies to Germany and France.", False),  # a wrapped line is no heading
        ("第三章 差旅", True), ("员工须提前预订。", False),
        ("短行也是正文。", False),  # a short Chinese line without a number is a wrap
    ]


def test_a_namesake_page_is_no_second_hop_and_a_hop_drawn_by_the_kind_does_not_lead(demo_kb):
    """"Who directed Black Book?" on the demo: the film's sentence answers it. The disc format
    also called Black Book was appended as a "second hop" (the film's sentence names its own
    title); once skipped, the page of an actress the film's sentence names was drawn by the asked
    kind alone (a person) and led the answer. The film's sentence holds every word of the question
    and a person: it answers alone, and no hop is sought."""
    question = "Who directed Black Book?"
    answer = demo_kb.generator.answer_to(question, demo_kb.retriever.retrieve(question))
    assert answer.text.startswith("Black Book (Dutch: Zwartboek )") and "Paul Verhoeven" in answer.text, answer.text
    assert "optical disc" not in answer.text and "(born 10 November 1975)" not in answer.text, answer.text


@pytest.mark.parametrize(("question", "lead"), [
    ("How often do auditors export logs?", "Auditors typically export logs"),
    ("How is the LCA computed with binary lifting?", "Binary lifting needs"),
])
def test_the_sentence_holding_the_question_leads_not_the_first_read(demo_kb, question, lead):
    """Two sentences of one passage answer, the one above first in reading order: the rotated-key
    line led "How often do auditors export logs?", the Euler tour led the binary-lifting question.
    The pick holding most of the question's words leads (``best_sentences._question_leads``)."""
    answer = extractive_answer(demo_kb, question)
    assert answer.text.startswith(lead), answer.text
