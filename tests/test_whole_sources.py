"""The extractive answerer reads its best sources whole, not the prompt's window of them: the
sentence answering may lie in the matched chunk's parent section, outside the window an LLM
would be given (through ingestion, the real retrieval and the extractive answerer)."""

from __future__ import annotations

from kgrag.config import LLMSettings
from kgrag.generate.generator import Generator
from tests.conftest import pages_fixture

FILLER = " ".join(f"Receipt rule {i}: keep the itemised receipt number {i} with the claim." for i in range(40))
PAGES = {
    "meals.md": "# Meals on company business\n\nThe maximum tip is 20% of the bill. " + FILLER
                + " Meals while traveling on company business are reimbursable up to $100 per day.",
    "hotels.md": "# Hotels\n\nBook hotels through the travel tool; the nightly limit is $250.",
}
QUESTION = "What is the maximum tip percentage for meals while traveling on company business?"


kb = pages_fixture(PAGES)


def _answer(kb, whole: int):
    generator = Generator(LLMSettings(extractive_whole_sources=whole), max_sources=2, max_context_chars=600)
    answer = generator.answer_to(QUESTION, kb.retriever.retrieve(QUESTION))
    assert answer.mode == "extractive" and not answer.unsupported_sentences and not answer.invalid_citations
    return answer


def test_the_answer_outside_the_prompt_window_is_read(kb):
    # The window around the matched chunk (the section's end, "… $100 per day") leaves out its
    # first sentence; read whole, the section answers.
    assert "20%" not in _answer(kb, 0).text
    answer = _answer(kb, 1)
    assert "The maximum tip is 20% of the bill [1]." in answer.text, answer.text
    cited = answer.citations[0]
    # Cited where it lies: the chunk holding it (not the matched one), the sentence highlighted.
    text = kb.chunk_index.get([cited.chunk_id])[0].text
    assert [text[start:end] for start, end in cited.highlights] == ["The maximum tip is 20% of the bill."]
