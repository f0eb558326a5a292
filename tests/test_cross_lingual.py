"""Chinese as a first-class language: the script-routed default embedder (MiniLM for English,
multilingual-e5 for Chinese, one stored vector per chunk), cross-lingual dense retrieval on a
small bilingual fixture, traditional/simplified folding, and the Chinese entity filter."""

from __future__ import annotations

import numpy as np
import pytest

from kgrag.models.routed import SCORE_SCALE, ScriptRoutedEmbedder
from kgrag.models.zh_entities import keep_candidate
from kgrag.retrieve.types import Query
from kgrag.text.analyze import analyze
from kgrag.text.normalize import normalize_alias
from kgrag.text.scripts import is_mainly_non_latin

from .conftest import REPO, pages_fixture

FIXTURE = REPO / "tests" / "fixtures" / "bilingual"
ENGLISH = ["The Eiffel Tower was built for the 1889 World's Fair.", "Plants release oxygen in daylight."]
CHINESE = ["长城东起山海关，西至嘉峪关。", "大熊猫主要以竹子为食。"]


def _blocks(embedder: ScriptRoutedEmbedder, row: np.ndarray) -> tuple[float, float, float]:
    fast = embedder.fast.dim
    return (float(np.linalg.norm(row[:fast])), float(np.linalg.norm(row[fast:-1])), float(row[-1]))


def test_script_routing_sends_each_text_to_its_model(embedder):
    assert isinstance(embedder, ScriptRoutedEmbedder) and embedder.dim == 384 + 384 + 1
    vectors = embedder.embed_corpus(ENGLISH + CHINESE, mixed=False)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    half = 1 / SCORE_SCALE
    for row in vectors[:2]:  # English: MiniLM block only, the pad tops the norm up
        np.testing.assert_allclose(_blocks(embedder, row), (half, 0.0, half), atol=1e-5)
    for row in vectors[2:]:  # Chinese: e5 block only
        np.testing.assert_allclose(_blocks(embedder, row), (0.0, half, half), atol=1e-5)
    mixed = embedder.embed_corpus(ENGLISH + CHINESE, mixed=True)
    for row in mixed[:2]:  # a mixed corpus: English passages get an e5 block too
        np.testing.assert_allclose(_blocks(embedder, row), (half, half, 0.0), atol=1e-5)
    np.testing.assert_allclose(mixed[2:], vectors[2:], atol=1e-6)


def test_english_text_never_loads_the_multilingual_model():
    """English corpora must not pay for e5: it is built on first need only."""
    from kgrag.config import EmbedderSettings
    from kgrag.models.embedder import build_embedder

    embedder = build_embedder(EmbedderSettings())
    assert isinstance(embedder, ScriptRoutedEmbedder)
    embedder.embed_corpus(ENGLISH, mixed=False)
    assert embedder._multilingual is None
    embedder.cross_lingual = "never"
    assert len(embedder.query_vectors("Who built the Eiffel Tower?")) == 1
    assert embedder._multilingual is None
    embedder.embed_corpus(CHINESE[:1], mixed=False)
    assert embedder._multilingual is not None


def test_an_english_knowledge_base_never_embeds_questions_with_e5(tmp_path, recognizer):
    """An English question is embedded by MiniLM only where the corpus is not bilingual (no
    vector holds both blocks: ``holds_dense_columns``): in an English knowledge base e5 is never
    loaded, and its dense hits are those of the MiniLM vector alone. One non-Latin passage
    added (an e5 block of its own) does not make the corpus bilingual: English questions still
    skip e5, a Russian question searches e5 and finds the Russian passage."""
    from kgrag.components import Components
    from kgrag.config import EmbedderSettings, Settings
    from kgrag.models.embedder import build_embedder
    from tests.conftest import hotpot_records, write_jsonl

    embedder = build_embedder(EmbedderSettings())
    write_jsonl(tmp_path / "en.jsonl", hotpot_records(20))
    russian = {"id": "ru", "title": "Москва", "text": "Москва — столица России и крупнейший город страны."}
    write_jsonl(tmp_path / "ru.jsonl", [russian])
    comps = Components(Settings(data_dir=tmp_path / "kb"), embedder=embedder, recognizer=recognizer)
    dense = comps.retriever.paths["dense"]
    fast = embedder.fast.dim
    ml = (fast, embedder.dim - 1)
    question = hotpot_records(1)[0]["title"] + " history"
    try:
        assert not comps.ingest_job().run([tmp_path / "en.jsonl"], progress=False).failed
        assert comps.chunk_index.holds_dense_columns((0, fast)) and not comps.chunk_index.holds_dense_columns(ml)
        hits = dense.search(Query(question, 5, None, ("dense",)), 5).hits
        assert embedder._multilingual is None  # never loaded
        minilm = comps.chunk_index.search_dense(embedder.query_vectors(question, lambda *r: all(b <= fast for _, b in r))[0].vector, 5)
        assert hits and [h.id for h in hits] == [h.id for h in minilm]

        assert not comps.ingest_job().run([tmp_path / "ru.jsonl"], progress=False).failed
        assert comps.chunk_index.holds_dense_columns(ml) and not comps.chunk_index.holds_dense_columns((0, fast), ml)
        vectors = embedder.query_vectors(question, comps.chunk_index.holds_dense_columns)
        assert len(vectors) == 1 and not np.any(vectors[0].vector[fast:])  # MiniLM only
        assert [h.id for h in dense.search(Query(question, 5, None, ("dense",)), 5).hits] == [h.id for h in hits]
        russian_hits = dense.search(Query("Какой город — столица России?", 5, None, ("dense",)), 5).hits
        assert [h.id for h in russian_hits][:1] == sorted(comps.chunk_index.chunk_ids_by_document()["ru"])[:1]
    finally:
        comps.close()


def test_question_searches_the_blocks_of_its_script(embedder):
    english = [q.vector for q in embedder.query_vectors("Who designed the Eiffel Tower?")]
    chinese = [q.vector for q in embedder.query_vectors("谁设计了埃菲尔铁塔？")]
    fast = embedder.fast.dim
    # MiniLM, then e5 twice: plain for English rows, through the language offsets for the rest
    assert len(english) == 3 and np.any(english[0][:fast]) and not np.any(english[0][fast:])
    assert all(not np.any(v[:fast]) and np.any(v[fast:-1]) for v in english[1:])
    assert len(chinese) == 2 and all(not np.any(v[:fast]) and np.any(v[fast:-1]) for v in chinese)


@pytest.fixture(scope="module")
def bilingual(tmp_path_factory, embedder, recognizer):
    from kgrag.components import Components
    from kgrag.config import Settings

    comps = Components(Settings(data_dir=tmp_path_factory.mktemp("bilingual")), embedder=embedder,
                       recognizer=recognizer)
    report = comps.ingest_job().run([FIXTURE], progress=False)
    assert not report.failed and len(report.new) == 6
    yield comps
    comps.close()


@pytest.mark.parametrize(("question", "doc"), [
    ("埃菲尔铁塔是哪一年建成的？", "eiffel_tower.md"),  # Chinese question, English passage
    ("植物如何利用阳光把二氧化碳变成葡萄糖？", "photosynthesis.md"),
    ("What do giant pandas eat every day?", "da_xiongmao.md"),  # English question, Chinese passage
    ("How long is the Great Wall of China?", "changcheng.md"),
    ("Which consensus mechanism does Bitcoin use?", "qukuailian.md"),
])
def test_cross_lingual_question_finds_its_passage_on_the_dense_path(bilingual, question, doc):
    """Within the top 2 of 6 passages: multilingual-e5-small (4-bit) is a small model, and an
    English question's MiniLM list leads with an English passage even when none is relevant
    (measured on this fixture: the Chinese passage comes 1st or 2nd)."""
    result = bilingual.retriever.retrieve(question, top_k=3, modes=("dense",))
    assert any(h.chunk.doc_id.endswith(doc) for h in result.hits[:2]), [h.chunk.doc_id for h in result.hits]
    dense = bilingual.retriever.paths["dense"].search(Query(question), bilingual.settings.retrieval.candidates)
    assert [h.id for h in dense.hits][:3] == [h.chunk.id for h in result.hits]
    assert all(-1.0 <= h.score <= 1.0 for h in dense.hits)  # cosines come back unscaled
    assert max(h.score for h in dense.hits) > 0.7


def test_chinese_question_lets_dense_vote_in_the_default_fusion(bilingual):
    result = bilingual.retriever.retrieve("大熊猫吃什么？", top_k=3)
    assert "dense" in result.query.modes and "dense" not in result.query.skipped
    assert result.hits[0].chunk.doc_id.endswith("da_xiongmao.md") and "dense" in result.hits[0].paths


def test_mainly_non_latin_is_judged_by_letter_share():
    assert is_mainly_non_latin("LCA 是最近公共祖先")
    assert not is_mainly_non_latin("Zhang Yimou (张艺谋) is a Chinese film director and writer.")
    assert not is_mainly_non_latin("12345 ...")
    assert is_mainly_non_latin("Привет, мир")


def test_traditional_and_simplified_fold_together_in_bm25_and_aliases():
    assert analyze("資料庫的設計") == analyze("资料库的设计")
    assert normalize_alias("臺灣大學") == normalize_alias("台湾大学")
    assert analyze("Database 資料庫") == ["databas", *analyze("资料库")]


@pytest.mark.parametrize(("word", "flag", "kept"), [
    ("深度", "ns", None),  # common words jieba's dictionary tags as proper nouns
    ("祖先", "nr", None),
    ("城市", "ns", None),
    ("养老", "nr", None),  # an "nr" word that starts with no surname
    ("张勇", "nr", "PERSON"),
    ("欧阳修", "nr", "PERSON"),
    ("雅温得", "nr", "PERSON"),  # a transliterated name
    ("北京", "ns", "GPE"),
    ("世界银行", "nt", "ORG"),
    ("佤族", "nz", "CONCEPT"),
    ("京", "ns", None),
    ("跑步", "v", None),
])
def test_chinese_entity_candidates_carry_meaning(word, flag, kept):
    assert keep_candidate(word, flag) == kept


def test_a_knowledge_base_embedded_by_minilm_alone_keeps_minilm_after_the_upgrade(tmp_path, recognizer):
    """Built before the routed default (384-dim vectors): still searched, and extended, with
    MiniLM — not a dimension error on every query."""
    from kgrag.components import Components
    from kgrag.config import EmbedderSettings, Settings

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "lca.md").write_text("# LCA\n\nThe lowest common ancestor of two nodes is their deepest shared ancestor.\n")
    (corpus / "heap.md").write_text("# Heap\n\nA binary heap keeps the smallest key at its root.\n")
    old = Components(Settings(data_dir=tmp_path / "kb", embedder=EmbedderSettings(name="minilm")), recognizer=recognizer)
    assert not old.ingest_job().run([corpus], progress=False).failed
    old.close()
    (corpus / "trie.md").write_text("# Trie\n\nA trie stores strings by their prefixes.\n")
    upgraded = Components(Settings(data_dir=tmp_path / "kb"), recognizer=recognizer)  # default: routed
    try:
        assert upgraded.embedder.dim == 384
        assert not upgraded.ingest_job().run([corpus], progress=False).failed  # trie.md is embedded too
        hits = upgraded.retriever.retrieve("deepest shared ancestor of two nodes", modes=("dense",)).hits
        assert hits[0].chunk.doc_id.endswith("lca.md")
        hits = upgraded.retriever.retrieve("strings stored by prefix", modes=("dense",)).hits
        assert hits[0].chunk.doc_id.endswith("trie.md")
    finally:
        upgraded.close()


def test_a_corpus_is_bilingual_for_chinese_not_for_any_other_script():
    """One Mongolian-script passage among English ones (as in hotpotqa_dev500) must not make
    every English chunk pay for the multilingual model; a Chinese one does make it bilingual."""
    from kgrag.ingest.job import _mixed_scripts
    from kgrag.types import Document

    english = Document(id="en", source="en.txt", text="Hanggin Rear Banner is a banner of Inner Mongolia.")
    mongolian = Document(id="mn", source="mn.txt", text="ᠬᠠᠩᠭᠢᠨ ᠬᠣᠶᠢᠲᠤ ᠬᠣᠰᠢᠭᠤ ᠬᠠᠩᠭᠢᠨ ᠬᠣᠶᠢᠲᠤ ᠬᠣᠰᠢᠭᠤ")
    chinese = Document(id="zh", source="zh.txt", text="杭锦后旗是内蒙古自治区巴彦淖尔市下辖的一个旗。")
    assert not _mixed_scripts([english, mongolian])
    assert _mixed_scripts([english, chinese]) and _mixed_scripts([english, mongolian, chinese])
    assert not _mixed_scripts([chinese])


def test_english_chunks_stored_before_chinese_arrives_get_the_multilingual_block(tmp_path, embedder, recognizer,
                                                                                  bilingual):
    """English documents ingested first (an English corpus: MiniLM only), Chinese ones in a
    later job: the stored English chunks are completed with their e5 block, so a Chinese
    question finds an English passage by meaning, and their vectors equal a one-job bilingual
    ingest's."""
    import shutil

    from kgrag.components import Components
    from kgrag.config import Settings

    english, chinese = tmp_path / "en", tmp_path / "zh"
    english.mkdir()
    chinese.mkdir()
    for f in FIXTURE.iterdir():
        shutil.copy(f, (chinese if is_mainly_non_latin(f.read_text(encoding="utf-8")) else english) / f.name)
    comps = Components(Settings(data_dir=tmp_path / "kb"), embedder=embedder, recognizer=recognizer)
    try:
        first = comps.ingest_job().run([english], progress=False)
        assert not first.failed and first.cross_lingual_completed == 0
        stored = [(c, v) for c, v in comps.chunk_index.iter_chunks() if c.searchable]
        english_ids = {c.id for c, _ in stored}
        assert english_ids and all(embedder.lacks_multilingual_block(v[None, :])[0] for _, v in stored)

        second = comps.ingest_job().run([chinese], progress=False)
        assert not second.failed and second.cross_lingual_completed == len(english_ids)
        result = comps.retriever.retrieve("埃菲尔铁塔是哪一年建成的？", top_k=3, modes=("dense",))
        assert result.hits[0].chunk.doc_id.endswith("eiffel_tower.md"), [h.chunk.doc_id for h in result.hits]

        reference = {c.id.split("/")[-1]: v for c, v in bilingual.chunk_index.iter_chunks()}
        for chunk, vector in comps.chunk_index.iter_chunks():
            if chunk.id in english_ids:
                assert not embedder.lacks_multilingual_block(vector[None, :])[0]
                assert np.allclose(vector, reference[chunk.id.split("/")[-1]], atol=1e-5), chunk.id
        # Nothing left to complete: a further Chinese ingest embeds none of them again.
        (chinese / "extra.md").write_text("# 故宫\n\n故宫位于北京中轴线的中心。", encoding="utf-8")
        assert comps.ingest_job().run([chinese], progress=False).cross_lingual_completed == 0
        # The knowledge base is bilingual now (its chunks' language facets say so): an English
        # document arriving alone gets both blocks too.
        later = tmp_path / "later"
        later.mkdir()
        (later / "tower_bridge.md").write_text(
            "# Tower Bridge\n\nTower Bridge is a bascule and suspension bridge in London, built between 1886 "
            "and 1894, crossing the River Thames.", encoding="utf-8")
        assert not comps.ingest_job().run([later], progress=False).failed
        added = [v for c, v in comps.chunk_index.iter_chunks() if c.doc_id.endswith("tower_bridge.md") and c.searchable]
        assert added and not any(embedder.lacks_multilingual_block(v[None, :])[0] for v in added)
        result = comps.retriever.retrieve("伦敦塔桥是什么时候建成的？", top_k=3, modes=("dense",))
        assert result.hits[0].chunk.doc_id.endswith("tower_bridge.md"), [h.chunk.doc_id for h in result.hits]
    finally:
        comps.close()


DEFINED_PAGES = {
    "login.md": "# 登录\n\n单点登录（Single Sign-On，简称 SSO）让用户用公司账号登录所有系统。\n",
    "tenants.md": "# 租户\n\n每个租户都必须启用单点登录，否则成员无法访问控制台。\n",
    "travel.md": "# Travel\n\nTeam members book flights through the travel portal and keep their receipts.\n",
}
defined_kb = pages_fixture(DEFINED_PAGES)


def test_an_english_question_reaches_a_chinese_term_defined_with_its_english_name(defined_kb):
    """"单点登录（Single Sign-On，简称 SSO）": the English name and the abbreviation are aliases of
    the Chinese term, and the keyword path searches its Chinese spelling, so a page that never
    writes "single sign-on" (the tenants page) is found by an English question."""
    question = "Does every tenant have to enable single sign-on?"
    result = defined_kb.retriever.retrieve(question, modes=["bm25"])
    assert [(le.surface, le.name) for le in result.query.linked] == [("single sign-on", "单点登录")]
    assert any("每个租户都必须启用单点登录" in h.chunk.text for h in result.hits), [h.chunk.text[:30] for h in result.hits]
    assert [le.name for le in defined_kb.retriever.retrieve("What is SSO?", modes=["bm25"]).query.linked] == ["单点登录"]


def test_the_gate_reads_no_sentence_meaning_in_an_english_knowledge_base(tmp_path, recognizer):
    """The gate weighs sentences written in another script than the question by meaning only in
    a bilingual knowledge base: a Russian line inside an English page of an English corpus is
    no reason to load e5 (seconds and hundreds of megabytes) for every English question."""
    from kgrag.components import Components
    from kgrag.config import EmbedderSettings, Settings
    from kgrag.generate.other_script import other_script_sentences
    from kgrag.models.embedder import build_embedder
    from tests.conftest import hotpot_records, write_jsonl

    embedder = build_embedder(EmbedderSettings())
    mixed = {"id": "moscow", "title": "Moscow",
             "text": "Moscow is the capital of Russia. Москва — столица России и крупнейший город страны."}
    write_jsonl(tmp_path / "en.jsonl", [*hotpot_records(20), mixed])
    comps = Components(Settings(data_dir=tmp_path / "kb"), embedder=embedder, recognizer=recognizer)
    question = "Which city is the capital of Russia?"
    try:
        assert not comps.ingest_job().run([tmp_path / "en.jsonl"], progress=False).failed
        assert not embedder.searches_multilingual(comps.chunk_index.holds_dense_columns)
        result = comps.retriever.retrieve(question)
        assert other_script_sentences(question, result.hits[:3]), [h.chunk.title for h in result.hits[:3]]
        assert comps.retriever.across_meaning is not None
        assert comps.retriever.across_meaning(question, result.hits) is None  # not read: e5 is not for this corpus
    finally:
        comps.close()
