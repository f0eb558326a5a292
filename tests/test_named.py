"""A question asking for a name answered by the heading of the section its answer lies in
("What is the name of the check …?" → "Inclusive Language Check: We use an open source Ruby gem
…"), through ingestion, the real retrieval and the extractive answerer."""

from __future__ import annotations

from kgrag.generate.extractive.heading_name import asked_kind
from tests.conftest import extractive_answer, pages_fixture

PAGES = {
    "job-families.md": "# Job families\n\n## Failed pipeline\n\nA failed pipeline blocks the merge request until it "
                       "is fixed.\n\n### Inclusive Language Check\n\nWe use an open source Ruby gem to flag "
                       "masculine-coded words and gendered pronouns in job families.\n",
    "careers.md": "# Careers\n\n## Dual career path\n\nA dual career path lets team members grow without managing "
                  "people.\n",
    "office.md": "# Office\n\n## Kitchen\n\nThe espresso machine on the third floor is called Bertha.\n",
    "principles.md": "# Product principles\n\n## Avoid Not Invented Here\n\nWe integrate existing open source tools "
                     "rather than building everything from scratch.\n",
}


kb = pages_fixture(PAGES)


def test_a_name_asked_is_answered_by_the_heading_above_the_answer(kb):
    answer = extractive_answer(kb, "What is the name of the check that flags masculine-coded words in job families?")
    assert answer.text.startswith("Inclusive Language Check: We use an open source Ruby gem"), answer.text
    # The kind asked may be named one level up: "Product principles > Avoid Not Invented Here".
    answer = extractive_answer(kb, "What is the name of the product principle of using existing open source tools?")
    assert answer.text.startswith("Avoid Not Invented Here: We integrate existing open source tools"), answer.text


def test_no_heading_when_no_name_is_asked_or_the_answer_says_it(kb):
    answer = extractive_answer(kb, "What does the Ruby gem flag in job families?")
    assert answer.text.startswith("We use an open source Ruby gem"), answer.text
    answer = extractive_answer(kb, "What is the name of the career path that lets team members grow without "
                                   "managing people?")
    assert answer.text.startswith("A dual career path lets team members grow"), answer.text
    # A heading not naming the kind asked ("Kitchen" for a machine) is no name of it.
    answer = extractive_answer(kb, "What is the name of the espresso machine on the third floor?")
    assert answer.text.startswith("The espresso machine on the third floor is called Bertha"), answer.text


def test_the_kind_of_name_asked():
    assert asked_kind("What is the name of the GitLab product principle that encourages reuse?") == "principl"
    assert asked_kind("What is the term for a job family role that carries responsibility?") == "role"
    assert asked_kind("What is the name of the Slack channel where team members ask for help?") == "channel"
    assert asked_kind("Who wrote the check?") is None
