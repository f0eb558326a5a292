"""A two-hop question's answer leads with the sentence from the page the first hop reaches (the
bridge), saying whom a leading pronoun means — through ingestion, the real retrieval and the
extractive answerer."""

from __future__ import annotations

from tests.conftest import extractive_answer, pages_fixture

PAGES = {
    "tokarev.md": "# Sergei Tokarev\n\nSergei Tokarev was a Russian ethnographer and a professor at Moscow State "
                  "University.",
    "msu.md": "# Moscow State University\n\nMoscow State University is a public research university in Moscow. "
              "Its motto is Science is the clear knowledge of truth.",
    "ivanov.md": "# Pavel Ivanov\n\nPavel Ivanov was a Russian chemist and a professor at Kazan Federal University.",
    "kazan.md": "# Kazan Federal University\n\nKazan Federal University is a public university in Kazan. The "
                "university motto is Learning lights the way.",
    "final-recipe.md": "# Final Recipe\n\nFinal Recipe is a 2013 drama film directed by Gina Kim. The film stars "
                       "Michelle Yeoh and Henry Lau.",
    "henry-lau.md": "# Henry Lau\n\nHenry Lau was born in Toronto in 1989. He debuted in 2008 as a "
                    "member of Super Junior-M.",
    "spbu.md": "# Saint Petersburg State University\n\nSaint Petersburg State University is a public research "
               "university in Saint Petersburg. Its colours are blue and white.",
}


kb = pages_fixture(PAGES)


def test_the_second_hop_leads_and_says_whom_its_pronoun_means(kb):
    answer = extractive_answer(kb, "What is the motto of the university at which Sergei Tokarev was a professor?")
    assert answer.text.startswith("Moscow State University: Its motto is Science is the clear knowledge of truth ["), \
        answer.text
    assert "Sergei Tokarev was a Russian ethnographer and a professor at Moscow State University [" in answer.text


def test_a_second_hop_sentence_picked_for_its_own_words_leads_too(kb):
    # Here the motto sentence is picked for its words ("university motto"), not as the bridge
    # added after the picks: it is still on the page the first hop reaches.
    answer = extractive_answer(kb, "What is the university motto of the university at which Pavel Ivanov was a "
                                   "professor?")
    assert answer.text.startswith("The university motto is Learning lights the way ["), answer.text


def test_a_sentence_opening_with_a_pronoun_says_whom_it_means(kb):
    answer = extractive_answer(kb, "Which actor from the drama film Final Recipe debuted as a member of Super "
                                   "Junior-M in 2008?")
    assert "Henry Lau: He debuted in 2008 as a member of Super Junior-M [" in answer.text, answer.text


def test_a_choice_between_two_keeps_reading_order(kb):
    answer = extractive_answer(kb, "Is the motto of the university at which Sergei Tokarev was a professor about "
                                   "science or about truth?")
    assert answer.text.startswith("Sergei Tokarev was a Russian ethnographer"), answer.text
