"""What a letter of an acronym stands for (kgrag.retrieve.acronyms): the rule, then the real
pipeline (embedded stores, MiniLM, spaCy) on a hand-made RACI page with a section per letter."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgrag.retrieve.acronyms import asked_letters
from tests.conftest import ingested_kb

PAGE = Path(__file__).parent / "fixtures" / "acronyms" / "raci.md"


@pytest.mark.parametrize(("question", "letters"), [
    ("In the MEDDPPICC sales framework, what does the 'I' stand for?", "I"),
    ("What does the letter C in RACI stand for?", "C"),
    ("what do the 'DP' stand for in MEDDPPICC?", "DP"),
    ("What does RACI stand for?", "RACI"),  # the whole acronym, three capitals or more: not a letter
    ("What does the company stand for?", None),
    ("Which letter does the RACI matrix start with?", None),
])
def test_the_letters_a_question_asks_about(question, letters):
    assert asked_letters(question) == (letters if letters is None or len(letters) <= 3 else None)


@pytest.fixture(scope="module")
def raci(tmp_path_factory, embedder, recognizer):
    comps = ingested_kb(tmp_path_factory.mktemp("acronyms"), embedder, recognizer, [PAGE], new=1)
    yield comps
    comps.close()


def _rank(result, section: str) -> int | None:
    return next((i for i, h in enumerate(result.hits, 1) if h.chunk.section_path.endswith(section)), None)


@pytest.mark.parametrize(("letter", "section"), [("C", "Consulted"), ("I", "Informed"), ("A", "Accountable"),
                                                 ("R", "Responsible")])
def test_the_section_of_the_asked_letter_comes_up(raci, monkeypatch, letter, section):
    """Without the rule the letter's section is 3rd–5th (the page's own opening and its
    neighbours share every word the question has); with it, 1st, or 2nd after the acronym's own
    page (the entity page of "RACI")."""
    import kgrag.retrieve.pipeline as pipeline

    question = f"In the RACI model, what does the '{letter}' stand for?"
    result = raci.retriever.retrieve(question, top_k=5)
    assert [le.name for le in result.query.described if le.method == "acronym letter"] == [section]
    assert section in result.query.expansions
    monkeypatch.setattr(pipeline, "letter_parts", lambda *args: [])  # this rule off, all else the same
    without = raci.retriever.retrieve(question, top_k=5)
    assert (_rank(without, section) or 99) >= 3, "the fixture must need the rule, else this proves nothing"
    assert (_rank(result, section) or 99) <= 2, [h.chunk.section_path for h in result.hits]


def test_without_a_letter_asked_nothing_is_added(raci):
    result = raci.retriever.retrieve("What does the RACI table hold for each deliverable?", top_k=5)
    assert not [le for le in result.query.described if le.method == "acronym letter"]
