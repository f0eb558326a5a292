"""Questions comparing two subjects, answered without an LLM through ingestion, the real retrieval
pipeline and the extractive answerer, with the words the answer rests on, each cited — and no
verdict without that evidence:
- yes/no about their countries ("Are A and B from the same country?", "Are both A and B
  American?", "Do the directors of films A and B ...?") and "both novelists?";
- which of two by a date ("Which film came out first, A or B?", "Who was born later, A or B?",
  "Which film has the director who died first, A or B?", "Who lived longer, A or B?");
- a question about whom a relation leads to ("Where was the director of film A born?", "Where did
  A's mother die?")."""

from __future__ import annotations

import datetime as dt

import pytest

from kgrag.generate.extractive.asked import Asked
from kgrag.generate.extractive.relation_hop import answer as relayed_answer
from kgrag.generate.extractive.which_of_two import which_asked
from kgrag.generate.extractive.yes_no import polar_asked
from kgrag.lexicon.countries import demonym, first_country
from tests.conftest import extractive_answer, pages_fixture

PAGES = {
    "seven-sinners.md": "# Seven Sinners (1936 film)\n\nSeven Sinners is a 1936 British thriller film directed by "
                        "Albert de Courville and starring Edmund Lowe. It was made at Islington Studios.",
    "everyday.md": "# Everyday (film)\n\nEveryday is a 2012 British drama film directed by Michael Winterbottom. "
                   "It was filmed over five years.",
    "doolins.md": "# The Doolins of Oklahoma\n\nThe Doolins of Oklahoma is a 1949 American Western film directed by "
                  "Gordon Douglas and starring Randolph Scott.",
    "de-courville.md": "# Albert de Courville\n\nAlbert Pierre de Courville (1887 – 1960) was an English theatrical "
                       "impresario and film director. He was born in Croydon and began as a journalist.",
    "gordon-douglas.md": "# Gordon Douglas\n\nGordon Douglas (1907 – 1993) was an American film director and actor. "
                         "He was born in New York City and began as a child actor.",
    "caracu.md": "# Caracu River\n\nThe Caracu River is a river of Paraná state in southern Brazil.",
    "rogue.md": "# South Fork Rogue River\n\nThe South Fork Rogue River is a tributary of the Rogue River in the "
                "U.S. state of Oregon.",
    "beglarian.md": "# Eve Beglarian\n\nEve Beglarian (born Ann Arbor, Michigan, U.S., July 22, 1958) is a "
                    "contemporary composer and performer of Armenian descent.",
    "jordan.md": "# Neil Jordan\n\nNeil Jordan (born 25 February 1950) is an Irish film director and novelist.",
    "le-carre.md": "# John le Carré\n\nJohn le Carré (1931 – 2020) was a British novelist, much of whose work "
                   "concerns espionage.",
    "winton.md": "# Tim Winton\n\nTim Winton (born 4 August 1960) is an Australian novelist and short story writer.",
    "meeting-venus.md": "# Meeting Venus\n\nMeeting Venus is a 1991 British–American drama film directed by "
                        "István Szabó.",
    "venus-rising.md": "# Venus Rising\n\nVenus Rising is a 1991 American science fiction film.",
    "philibert.md": "# Philibert of Brenne\n\nPhilibert of Brenne (1465 – 1482) was a duke, the son of Amadeus of "
                    "Brenne and Yolande of Valmont.",
    "amadeus.md": "# Amadeus of Brenne\n\nAmadeus of Brenne (1435 – 1472) was a duke, the son of Louis of Brenne. "
                  "He died in Vercelli.",
    "yolande.md": "# Yolande of Valmont\n\nYolande of Valmont (1434 – 1478) was a duchess and regent. She died in "
                  "Moncrivello.",
    "untouchables.md": "# The Untouchables (film)\n\nThe Untouchables is a 1987 American crime film directed by "
                       "Brian De Palma.",
}


kb = pages_fixture(PAGES)


_answer = extractive_answer


def _cited_titles(answer) -> set[str]:
    return {c.title for c in answer.citations}


def test_the_same_country_yes_with_both_sentences_cited(kb):
    answer = _answer(kb, "Do the movies Seven Sinners (1936 Film) and Everyday (Film) originate from the same country?")
    assert answer.text.startswith("Yes — Seven Sinners: British [")
    assert "; Everyday: British [" in answer.text
    assert "Seven Sinners is a 1936 British thriller film" in answer.text and "Everyday is a 2012 British" in answer.text
    assert _cited_titles(answer) == {"Seven Sinners (1936 film)", "Everyday (film)"}


def test_the_same_country_no_read_from_a_state_and_a_country(kb):
    answer = _answer(kb, "Are both Caracu River and South Fork Rogue River located in the same country?")
    assert answer.text.startswith("No — Caracu River: Brazil [")
    assert "South Fork Rogue River: U.S. [" in answer.text
    assert _cited_titles(answer) == {"Caracu River", "South Fork Rogue River"}


def test_different_countries_asks_the_opposite(kb):
    answer = _answer(kb, "Are Caracu River and South Fork Rogue River located in different countries?")
    assert answer.text.startswith("Yes — Caracu River: Brazil [")


def test_the_directors_of_two_films_are_found_first(kb):
    answer = _answer(kb, "Are the directors of films Seven Sinners (1936 Film) and The Doolins Of Oklahoma "
                         "from the same country?")
    assert answer.text.startswith("No — Albert de Courville: English [")
    assert "Gordon Douglas: American [" in answer.text
    assert "directed by Albert de Courville" in answer.text  # the hop's own sentence is quoted too
    assert {"Albert de Courville", "Gordon Douglas", "Seven Sinners (1936 film)"} <= _cited_titles(answer)


def test_both_of_a_named_nationality(kb):
    answer = _answer(kb, "Are both Neil Jordan and Tim Winton American?")
    assert answer.text.startswith("No — Neil Jordan: Irish [")  # "Jordan" in his name is no country
    assert "Tim Winton: Australian [" in answer.text
    answer = _answer(kb, "Were Gordon Douglas and The Doolins Of Oklahoma both Americans?")
    assert answer.text.startswith("Yes — Gordon Douglas: American [")


def test_a_birthplace_in_brackets_and_a_descent_are_no_nationality(kb):
    """Eve Beglarian's page names Armenia as her descent, which is no nationality, and the U.S.
    only as her birthplace, in brackets, which counts because nothing else names a country; and
    "both of Armenian descent" is asked of each page's words, which the Irish page lacks."""
    answer = _answer(kb, "Are Eve Beglarian and Neil Jordan from the same country?")
    assert answer.text.startswith("No — Eve Beglarian: Michigan, U.S. [")  # only the brackets name one
    answer = _answer(kb, "Are Eve Beglarian and Neil Jordan both of Armenian descent?")
    assert not answer.text.startswith(("Yes", "No"))  # a category the Irish page does not hold


def test_a_shared_one_of_several_nationalities_is_the_same_country(kb):
    answer = _answer(kb, "Are Meeting Venus and The Untouchables (Film) from the same country?")
    assert answer.text.startswith("Yes — Meeting Venus: British–American [")


def test_both_of_a_kind_is_yes_only_when_both_pages_say_so(kb):
    answer = _answer(kb, "Are John le Carré and Tim Winton both novelists?")
    assert answer.text.startswith("Yes — both novelists: John le Carré [")
    assert "British novelist" in answer.text and "Australian novelist" in answer.text
    answer = _answer(kb, "Are John le Carré and Gordon Douglas both novelists?")
    assert not answer.text.startswith(("Yes", "No"))  # "film director" does not say he is no novelist
    # A relation noun in the category is what both are; before the subjects it is a hop.
    answer = _answer(kb, "Are Albert de Courville and Gordon Douglas both film directors?")
    assert answer.text.startswith("Yes — both film directors: Albert de Courville [")
    answer = _answer(kb, "Are the directors of films Seven Sinners (1936 Film) and Everyday (Film) both novelists?")
    assert not answer.text.startswith(("Yes", "No"))


def test_which_of_two_and_open_questions_are_not_yes_no_questions(kb):
    result = kb.retriever.retrieve("Is Seven Sinners or Everyday the older film?")
    sources = kb.generator._sources(result.hits)
    assert polar_asked("Is Seven Sinners or Everyday the older film?", sources) is None
    assert polar_asked("Which country is Everyday from?", sources) is None
    asked = polar_asked("Do the movies Seven Sinners (1936 Film) and Everyday (Film) originate from the same country?",
                        sources)
    assert asked is not None and asked.subjects == ("Seven Sinners (1936 Film)", "Everyday (Film)")


@pytest.mark.parametrize(("text", "country", "surface"), [
    ("Neil Jordan is an Irish film director.", "Ireland", "Irish"),
    ("He is a German-born American actor.", "United States", "American"),
    ("It is located in British Columbia, Canada.", "Canada", "Canada"),
    ("Chad Smith was born in New Jersey.", "United States", "New Jersey"),
    ("In France, the film was a hit.", "France", "France"),
    ("a station in Hubei Province, People's Republic of China", "China", "People's Republic of China"),
    ("an Icelandic novelist", "Iceland", "Icelandic"),
])
def test_countries_named_in_text(text, country, surface):
    found = first_country(text)
    assert found is not None and (found.country, found.surface) == (country, surface)


def test_no_country_in_names_and_words():
    assert first_country("Rhode Island Red is a breed of chicken, Neil Jordan said.") is None
    assert first_country("Neil Jordan and Chad Smith met on the Island.") is None
    assert first_country("Neil Jordan met her in Rhode Island.").country == "United States"  # type: ignore[union-attr]
    assert demonym("United States") == "American" and demonym("China") == "Chinese"


def test_which_film_came_out_first(kb):
    answer = _answer(kb, "Which film came out first, Seven Sinners (1936 Film) or Everyday (Film)?")
    assert answer.text.startswith("Seven Sinners — 1936 [")
    assert "]. Everyday — 2012 [" in answer.text
    assert _cited_titles(answer) == {"Seven Sinners (1936 film)", "Everyday (film)"}
    answer = _answer(kb, "Which film was released more recently, The Doolins Of Oklahoma or Meeting Venus?")
    assert answer.text.startswith("Meeting Venus — 1991 [")
    assert "]. The Doolins Of Oklahoma — 1949 [" in answer.text


def test_who_was_born_first_reads_the_brackets_after_the_name(kb):
    answer = _answer(kb, "Who was born first, Tim Winton or Neil Jordan?")
    assert answer.text.startswith("Neil Jordan — born 25 February 1950 [")
    assert "]. Tim Winton — born 4 August 1960 [" in answer.text
    answer = _answer(kb, "Who is younger, Neil Jordan or Tim Winton?")
    assert answer.text.startswith("Tim Winton — born 4 August 1960 [")


def test_the_film_whose_director_died_later(kb):
    answer = _answer(kb, "Which film has the director who died later, Seven Sinners (1936 Film) or "
                         "The Doolins Of Oklahoma?")
    assert answer.text.startswith("The Doolins Of Oklahoma — director Gordon Douglas, died 1993 [")
    assert "]. Seven Sinners — director Albert de Courville, died 1960 [" in answer.text
    assert "directed by Albert de Courville" in answer.text and "Gordon Douglas (1907 – 1993)" in answer.text


def test_who_lived_longer(kb):
    answer = _answer(kb, "Who lived longer, Albert de Courville or Gordon Douglas?")
    assert answer.text.startswith("Gordon Douglas — 1907 – 1993 [")
    assert "]. Albert de Courville — 1887 – 1960 [" in answer.text


def test_a_tie_is_no_choice(kb):
    """Both films are dated 1991: the answer quotes them and chooses neither."""
    answer = _answer(kb, "Which film came out first, Meeting Venus or Venus Rising?")
    assert not answer.text.startswith(("Meeting Venus —", "Venus Rising —"))
    assert "1991" in answer.text


def test_which_of_two_questions_are_read_as_such(kb):
    question = "Which film came out first, Seven Sinners (1936 Film) or Everyday (Film)?"
    sources = kb.generator._sources(kb.retriever.retrieve(question).hits)
    asked = which_asked(question, sources)
    assert asked is not None and asked.options == ("Seven Sinners (1936 Film)", "Everyday (Film)")
    assert (asked.date, asked.earliest, asked.relation) == ("event", True, None)
    asked = which_asked("Which film has the director born later, Seven Sinners (1936 Film) or Everyday (Film)?", sources)
    assert asked is not None and (asked.date, asked.earliest, asked.relation) == ("birth", False, "director")
    assert which_asked("Which film is British, Seven Sinners (1936 Film) or Everyday (Film)?", sources) is None
    assert which_asked("Seven Sinners (1936 Film) or Everyday (Film)?", sources) is None


def test_the_director_of_a_film_is_read_on_his_own_page(kb):
    """Two directors' pages each say where he was born: the answer reads the one the film's page
    names, and leads with it."""
    answer = _answer(kb, "Where was the director of film Seven Sinners (1936 Film) born?")
    assert answer.text.startswith("Albert Pierre de Courville (1887 – 1960) was an English")
    assert "He was born in Croydon" in answer.text and "directed by Albert de Courville" in answer.text
    assert "New York" not in answer.text
    assert _cited_titles(answer) == {"Albert de Courville", "Seven Sinners (1936 film)"}
    answer = _answer(kb, "Where was The Doolins Of Oklahoma's director born?")
    assert "He was born in New York City" in answer.text and "Croydon" not in answer.text


def test_no_hop_without_the_person_named(kb):
    question = "Where was the composer of film Everyday (Film) born?"  # its page names no composer
    sources = kb.generator._sources(kb.retriever.retrieve(question).hits)
    assert relayed_answer(Asked(question, dt.date.today()), sources) is None


def test_a_parent_is_read_as_the_page_names_them(kb):
    """"the son of A and B": A is the father, B the mother; each is read on their own page."""
    answer = _answer(kb, "Where did Philibert of Brenne's mother die?")
    assert answer.text.startswith("Yolande of Valmont (1434 – 1478)")  # her page first
    assert "She died in Moncrivello [" in answer.text
    assert "son of Amadeus of Brenne and Yolande of Valmont" in answer.text and "Vercelli" not in answer.text
    answer = _answer(kb, "Where did the father of Philibert of Brenne die?")
    assert "He died in Vercelli [" in answer.text and "Moncrivello" not in answer.text


def test_a_grandparent_is_two_hops(kb):
    """"paternal grandfather": the father's page names his father."""
    answer = _answer(kb, "Who is Philibert of Brenne's paternal grandfather?")
    assert answer.text.startswith("Amadeus of Brenne (1435 – 1472) was a duke, the son of Louis of Brenne [")
    assert "son of Amadeus of Brenne and Yolande of Valmont" in answer.text
    assert _cited_titles(answer) == {"Amadeus of Brenne", "Philibert of Brenne"}
