"""Questions about a place reached through something else ("Who was the first president of
Damerjog's country?", "the most popular hotel in Gisvi's city of birth", "the county where Black
Hawk Township is located"), answered without an LLM through ingestion, the real retrieval pipeline
and the extractive answerer: the place read from the subject's own sentence, then the question
read again with the place in its stead — and no hop when the subject's page names no place."""

from __future__ import annotations

import pytest

from kgrag.generate.extractive.place_hop import asks_about_the_place, place_asked
from tests.conftest import extractive_answer, pages_fixture

PAGES = {
    "damerjog.md": "# Damerjog\n\nDamerjog is a small village located in eastern Djibouti, north of the border with "
                   "Somalia. It is populated by farmers and gardeners.",
    "djibouti.md": "# History of Djibouti\n\nDjibouti gained its independence from France in 1977. Hassan Gouled "
                   "Aptidon became Djibouti's first president and served until 1999.",
    "somalia.md": "# Somalia\n\nAden Abdullah Osman Daar was the first president of Somalia, from 1960 to 1967.",
    "gisvi.md": "# Gisvi\n\nGisvi Antunes (born 6 March 1982 in Windhoek, South-West Africa) is a Portuguese retired "
                "footballer who played as a forward.",
    "windhoek.md": "# Windhoek\n\nWindhoek is the capital and largest city of Namibia. The Windhoek Country Club "
                   "Resort is the most popular hotel in Windhoek.",
    "toronto.md": "# Hotels in Toronto\n\nThe Fairmont Royal York is the most popular hotel in Toronto.",
    "black-hawk.md": "# Black Hawk Township\n\nBlack Hawk Township is a township located in Jefferson County, Iowa.",
    "jefferson.md": "# Jefferson County, Iowa\n\nJefferson County shares a border with Wapello County to the west.",
    "black-hawk-county.md": "# Black Hawk County, Iowa\n\nBlack Hawk County shares a border with Buchanan County.",
    "dai.md": "# Dai Jitao\n\nDai Jitao (1891 – 1949) was a Chinese journalist and an early Kuomintang member.",
    "debt.md": "# National debt of the United States\n\nForeign holders of the debt are led by China (about $1.18 "
               "trillion), then Japan (about $1.06 trillion).",
    "nugegoda.md": "# Nugegoda\n\nNugegoda is a large suburb with a busy market and many schools.",
    "ceylon.md": "# Dominion of Ceylon\n\nCeylon left the British Empire on 4 February 1948.",
    "worrall.md": "# Henry Worrall\n\nHenry Worrall (1825 – 1902) was an American artist in Ohio and Kansas. He "
                  "died in Kansas in 1902.",
    "kansas.md": "# Kansas\n\nKansas is divided into 4 congressional districts.",
    "ohio.md": "# Ohio\n\nOhio is divided into 15 congressional districts.",
    "brother.md": "# Brother (Pearl Jam song)\n\n\"Brother\" is a song by the American rock band Pearl Jam.",
    "pearl-jam.md": "# Pearl Jam\n\nPearl Jam is an American rock band formed in 1990 in Seattle, Washington.",
    "seattle.md": "# Seattle\n\nSeattle averages 6.8 inches of snowfall a year.",
    "boston.md": "# Boston\n\nBoston averages 43.8 inches of snowfall a year.",
    "brand.md": "# Brand (play)\n\nBrand is a play by the Norwegian playwright Henrik Ibsen.",
    "ibsen.md": "# Henrik Ibsen\n\nHenrik Ibsen (1828 – 1906) was a Norwegian playwright. He was born in Skien.",
    "skien.md": "# Skien\n\nSkien lies on the river Skienselva, south of Oslo.",
}


kb = pages_fixture(PAGES)


_answer = extractive_answer


def test_the_country_a_village_is_in_is_read_from_its_own_sentence(kb):
    answer = _answer(kb, "Who was the first president of Damerjog's country?")
    assert answer.text.startswith("Hassan Gouled Aptidon became Djibouti's first president")
    assert "Damerjog is a small village located in eastern Djibouti" in answer.text
    assert "Aden Abdullah Osman Daar" not in answer.text  # Somalia's, named on the same page
    assert [c.title for c in answer.citations] == ["Damerjog", "History of Djibouti"]


def test_a_birthplace_in_brackets(kb):
    answer = _answer(kb, "What is the most popular hotel in Gisvi's city of birth?")
    assert answer.text.startswith("The Windhoek Country Club Resort is the most popular hotel in Windhoek")
    assert "Fairmont" not in answer.text
    assert "born 6 March 1982 in Windhoek" in answer.text


def test_the_county_a_township_is_located_in(kb):
    answer = _answer(kb, "What county shares a border with the county where Black Hawk Township is located?")
    assert answer.text.startswith("Jefferson County shares a border with Wapello County")
    assert "Buchanan" not in answer.text


def test_a_country_named_by_its_people(kb):
    answer = _answer(kb, "What is the debt load for the US carried by the country Dai Jitao is from?")
    assert answer.text.startswith("Foreign holders of the debt are led by China (about $1.18 trillion)")
    assert "was a Chinese journalist" in answer.text


def test_the_state_someone_died_in_is_read_where_the_page_says_so(kb):
    answer = _answer(kb, "The state where Henry Worrall died has how many congressional districts?")
    assert answer.text.startswith("Kansas is divided into 4 congressional districts")
    assert "He died in Kansas in 1902 [" in answer.text and "15 congressional" not in answer.text


def test_a_performer_then_the_city_they_formed_in(kb):
    answer = _answer(kb, "What is the usual average snowfall in the city where the performers of Brother were formed?")
    assert answer.text.startswith("Seattle averages 6.8 inches of snowfall a year")
    assert "formed in 1990 in Seattle" in answer.text and "is a song by the American rock band Pearl Jam" in answer.text
    assert "Boston" not in answer.text


def test_an_author_named_by_what_they_wrote_then_their_birthplace(kb):
    answer = _answer(kb, "Which river is by the birthplace of the author of Brand?")
    assert answer.text.startswith("Skien lies on the river Skienselva")
    assert "He was born in Skien" in answer.text and "Brand is a play by the Norwegian playwright" in answer.text


def test_a_question_for_the_place_itself_is_no_place_hop(kb):
    question = "What is the birthplace of Gisvi?"
    asked = place_asked(question, _sources(kb, question))
    assert asked is not None and not asks_about_the_place(question, asked)
    assert "in Windhoek" in _answer(kb, question).text.split(" [")[0]


def _sources(kb, question: str):
    return kb.generator._sources(kb.retriever.retrieve(question).hits)


def test_no_hop_when_the_subject_names_no_place(kb):
    question = "When did the country containing Nugegoda leave the British Empire?"
    asked = place_asked(question, _sources(kb, question))
    assert asked is not None and (asked.kind, asked.subject) == ("country", "Nugegoda")
    answer = _answer(kb, question)  # the usual extractive answer: nothing read as the country
    assert answer.text.startswith("Ceylon left the British Empire on 4 February 1948")
    assert "Nugegoda" not in answer.text.split(".")[0]


@pytest.mark.parametrize(("question", "kind", "subject", "phrase"), [
    ("Who was the first president of Damerjog's country?", "country", "Damerjog", "Damerjog's country"),
    ("When did the country where the village of Damerjog is located, become a republic?", "country", "Damerjog",
     "the country where the village of Damerjog is located,"),
    ("Who leads the country Dai Jitao is from?", "country", "Dai Jitao", "the country Dai Jitao is from"),
    ("Who was president of Dai Jitao's country of citizenship?", "country", "Dai Jitao",
     "Dai Jitao's country of citizenship"),
    ("In what county is the city where Gisvi was born?", "locality", "Gisvi", "the city where Gisvi was born"),
    ("Of what church is the Diocese of the birthplace of Gisvi?", "locality", "Gisvi", "the birthplace of Gisvi"),
    ("What county shares a border with the county in which Black Hawk Township is located?", "county",
     "Black Hawk Township", "the county in which Black Hawk Township is located"),
])
def test_place_phrases_are_read(kb, question, kind, subject, phrase):
    asked = place_asked(question, _sources(kb, question))
    assert asked is not None
    assert (asked.kind, asked.subject, question[asked.span[0]:asked.span[1]]) == (kind, subject, phrase)


def test_questions_without_a_place_phrase(kb):
    for question in ("Who was the first president of Djibouti?", "Which country has the most hotels?",
                     "When was Gisvi born?"):
        assert place_asked(question, _sources(kb, question)) is None
