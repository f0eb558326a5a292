"""The shared entity-name layer: script classes, the gazetteer's public matching API (what query
linking relies on) and title names. Gazetteer matching rules and glossary formats are tested
in test_extract.py and test_gazetteer_any_case.py."""

from __future__ import annotations

import pytest

from kgrag.lexicon.gazetteer import Gazetteer, candidate_aliases, english_stop_words, find_aliases, units
from kgrag.lexicon.titles import is_name_like_title, section_heading, title_aliases
from kgrag.text.normalize import normalize_alias, to_simplified
from kgrag.text.scripts import (
    NER_MASKED_RUN,
    han_runs,
    has_han,
    has_latin_capital,
    is_char_breakable,
    is_no_space_char,
    opening,
)


def test_each_script_class_answers_its_own_question():
    # Chinese? Han only: kana and Hangul are other languages.
    assert has_han("LCA 即最近公共祖先") and not has_han("ひらがな カタカナ") and not has_han("한국어 LCA")
    assert [m.group() for m in han_runs("LCA即最近公共祖先, 或 lowest")] == ["即最近公共祖先", "或"]
    # Cut anywhere? Han, kana and Hangul syllables, never inside a Latin word or at punctuation.
    assert all(is_char_breakable(c) for c in "祖か한") and not any(is_char_breakable(c) for c in "a1，。")
    # No space next to it? Han and CJK / full-width punctuation, not kana or Latin.
    assert all(is_no_space_char(c) for c in "祖，。（Ａ") and not any(is_no_space_char(c) for c in ("a", "か", ""))
    # Hidden from the English NER: Han, kana and CJK punctuation, but full-width letters stay.
    masked = NER_MASKED_RUN.sub(lambda m: "#" * len(m.group()), "Bill Gates和Paul Allen，ＡＢ。かな")
    assert masked == "Bill Gates#Paul Allen#ＡＢ###"
    assert has_latin_capital("the Beatles") and not has_latin_capital("the beatles 甲壳虫")


def test_units_are_words_and_single_unspaced_characters():
    text = normalize_alias("Lowest Common Ancestor 最近祖先 ひら 한국어")
    assert [text[s:e] for s, e in units(text)] == ["lowest", "common", "ancestor", "最", "近", "祖", "先", "ひ", "ら", "한국어"]


def test_an_opening_counts_words_and_single_han_characters_alike():
    # A budget in words would hold 600 Chinese characters (~450 subword tokens) as one "word".
    assert opening("The director of Glass Harbor was born in Tartu.", 4) == "The director of Glass"
    assert opening("最近公共祖先（LCA）是树上两个结点的祖先", 7) == "最近公共祖先（LCA）"
    assert opening("Lowest 最近 common", 2) == "Lowest 最"
    assert opening("short text", 120) == "short text" and opening("anything", 0) == ""
    chinese = "最" * 600
    assert len(opening(chinese, 120)) == 120


def test_find_aliases_grows_from_every_unit_until_no_alias_can_continue():
    # Single characters are never matchable pieces; every longer run is, with its offsets.
    assert find_aliases("a b c", None, None) == [(0, 3, "a b"), (0, 5, "a b c"), (2, 5, "b c")]
    text = "lowest common ancestor and lowest 祖先"
    aliases = {"lowest common", "lowest common ancestor", "祖先", "ancestor and"}
    # Growth stops after a piece that is no prefix: "ancestor and" is never reached from "ancestor".
    assert [p for _, _, p in find_aliases(text, aliases, {"lowest", "lowest common", "祖"})] == [
        "lowest common", "lowest common ancestor", "祖先"]
    assert [p for _, _, p in find_aliases(text, aliases, None)] == [
        "lowest common", "lowest common ancestor", "ancestor and", "祖先"]


def test_candidate_aliases_are_every_matchable_ngram_once_in_order():
    found = candidate_aliases("The LCA (lowest-common ancestor) of 2 nodes: 祖先, the LCA again")
    assert found[:3] == ["the", "the lca", "the lca lowest"]
    assert "lowest common ancestor" in found and "祖先" in found and "2 nodes" in found
    assert len(found) == len(set(found))
    # Never: one character ("祖", "2") or a bare number.
    assert "祖" not in found and "2" not in found and candidate_aliases("1 2 3 4") == []


@pytest.mark.parametrize("text", [
    "Who founded Lomonosov Moscow State University, and is the LCA in the tree?",
    "最近公共祖先（LCA）问题: the lowest common ancestor of May and Heap.",
    "IT at WHO is not it; the Heap is a heap.",
])
def test_a_gazetteer_over_the_candidates_found_matches_like_one_over_the_whole_table(text):
    """The contract query linking relies on: looking up only ``candidate_aliases(text)`` in a
    store and matching with a gazetteer over what was found gives exactly the whole table's
    matches."""
    table = {
        "LCA": ["lca"], "Lowest Common Ancestor": ["lca"], "最近公共祖先": ["lca"], "公共": ["public"],
        "Moscow State University": ["msu"], "Lomonosov Moscow State University": ["msu"],
        "Moscow": ["moscow"], "May": ["may_person", "may_month"], "heap": ["heap"], "IT": ["it"],
        "WHO": ["who"], "tree": ["tree"], "unrelated alias": ["x"],
    }
    any_case = ["heap", "tree"]
    whole = Gazetteer(table, any_case=any_case)
    normalized_table = {normalize_alias(a): keys for a, keys in table.items()}
    wanted = set(candidate_aliases(text))
    found = {alias: keys for alias, keys in normalized_table.items() if alias in wanted}
    assert "unrelated alias" not in found
    assert Gazetteer(found, any_case=any_case).match(text) == whole.match(text)
    assert whole.match(text)  # each text names something: the comparison is not of two empties


def test_english_stop_words_are_spacys_list_loaded_once():
    from spacy.lang.en.stop_words import STOP_WORDS

    words = english_stop_words()
    assert {"it", "who", "the", "may"} <= words and "heap" not in words
    assert words == frozenset(STOP_WORDS)  # read from spaCy's file, without importing spaCy
    assert english_stop_words() is words


def test_to_simplified_leaves_text_without_han_alone():
    assert to_simplified("ひらがな lca") == "ひらがな lca"


def test_titles_name_entities_with_their_short_forms():
    assert title_aliases("The Boss (2016 film)") == ["The Boss (2016 film)", "The Boss", "Boss"]
    assert is_name_like_title("The Beatles") and is_name_like_title("最近公共祖先")
    assert not is_name_like_title("1999") and not is_name_like_title("X")
    assert not is_name_like_title("A title far too long to be the name of anything in the graph at all")


def test_a_section_heading_names_its_entity_without_markup():
    """21 of the handbook's 1,418 headings carry Markdown or HTML; the section entity is named as
    a question spells it, and names whose symbols are part of them stay whole."""
    assert section_heading("Values > **Product Principles**") == "Product Principles"
    assert section_heading('Security > <i class="fas fa-shield"></i> Security Vision') == "Security Vision"
    assert section_heading("Tools > `kubectl` basics") == "kubectl basics"
    assert section_heading("Bands > *NSYNC") == "*NSYNC"
    assert section_heading("Languages > C++") == "C++"
    assert section_heading("**Bold only**") == "Bold only"
