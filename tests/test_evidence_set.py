"""The fusion stage's rules on a tiny hand-made corpus whose right answers are known, through
the served pipeline with the shipped models (MiniLM, spaCy, jieba) and the embedded stores.

Two fictional films, their two directors, and reviews that name both films together with the
question's words ("director", "born", "later") but never the directors: BM25 and the dense path
rank the reviews first, and only the graph reaches the directors (each director's page never
names the film). A comparison question through the directors needs all four pages.
"""

from __future__ import annotations

import pytest

from kgrag.retrieve.evidence import BRIDGE, ENTITY_PAGE

FILMS = [
    {"id": "film-copper-lantern", "title": "The Copper Lantern",
     "text": "The Copper Lantern is a 1952 Hungarian drama film directed by Ilse Varga. It follows a "
             "glassblower's family in the years after the war."},
    {"id": "film-winter-saltmarsh", "title": "Winter at Saltmarsh",
     "text": "Winter at Saltmarsh is a 1961 Danish film directed by Tomas Reyel, shot on the island "
             "of Fanø with a cast of local fishermen."},
    {"id": "person-ilse-varga", "title": "Ilse Varga",
     "text": "Ilse Varga (born 4 March 1919 in Szeged) was a Hungarian director and screenwriter. "
             "She studied painting in Budapest before turning to cinema."},
    {"id": "person-tomas-reyel", "title": "Tomas Reyel",
     "text": "Tomas Reyel (born 17 June 1928 in Esbjerg) was a Danish director. He began as a "
             "newsreel cameraman and later taught at the national film school."},
]
REVIEWS = [
    {"id": f"review-{i}", "title": title,
     "text": f"{text} The Copper Lantern and Winter at Saltmarsh were both shown; which film's "
             "director was born later was a question the programme notes left open."}
    for i, (title, text) in enumerate([
        ("Festival notes, day one", "The retrospective opened with two restored prints."),
        ("Festival notes, day two", "Critics compared the restorations shown this year."),
        ("A season of restored films", "The cinematheque's season paired films by their directors' birth years."),
        ("Letters to the editor", "A reader asked which director was born later."),
        ("Programme booklet", "The booklet lists each film with its director and year."),
        ("Radio review", "The presenter praised the films but not their later reputations."),
    ])
]
# News items without titles (as in the RGB news set): the graph has no entity page to point at.
NEWS = [
    {"id": "news-1", "title": "",
     "text": "The harbour authority of Esbjerg approved a new ferry terminal on Monday."},
    {"id": "news-2", "title": "",
     "text": "Fishermen in Esbjerg protested against the new quotas announced in Copenhagen."},
]
# Filler, so that the directors (named in 2 of the corpus's chunks) are specific enough for the
# graph to walk through: it skips entities in more than 5% of chunks.
FILLER = [
    {"id": f"register-{i}", "title": f"Parish register {i}",
     "text": f"The parish register number {i} records {3 * i + 7} baptisms and {i + 2} weddings "
             f"in the year {1800 + i}, written in a clerk's careful hand."}
    for i in range(60)
]
QUESTION = "Which film has the director born later, The Copper Lantern or Winter at Saltmarsh?"


@pytest.fixture(scope="module")
def kb(tmp_path_factory, embedder, recognizer):
    from kgrag.components import Components
    from kgrag.config import Settings
    from tests.conftest import write_jsonl

    root = tmp_path_factory.mktemp("evidence-kb")
    corpus = write_jsonl(root / "corpus.jsonl", FILMS + REVIEWS + NEWS + FILLER)
    comps = Components(Settings(data_dir=root / "kb"), embedder=embedder, recognizer=recognizer)
    report = comps.ingest_job().run([corpus])
    assert not report.failed
    yield comps
    comps.close()


def _docs(result, n: int) -> list[str]:
    return list(dict.fromkeys(h.chunk.doc_id for h in result.hits))[:n]


def _hit(result, doc_id: str):
    return next(h for h in result.hits if h.chunk.doc_id == doc_id)


def test_bridge_comparison_keeps_both_films_and_both_directors(kb):
    result = kb.retriever.retrieve(QUESTION, top_k=10)
    gold = {"film-copper-lantern", "film-winter-saltmarsh", "person-ilse-varga", "person-tomas-reyel"}
    assert gold <= set(_docs(result, 5))
    # Each director's page is there as its film's bridge, and the trace says so.
    for film, director, person in (("the copper lantern", "ilse varga", "person-ilse-varga"),
                                   ("winter at saltmarsh", "tomas reyel", "person-tomas-reyel")):
        placed = _hit(result, person).placed_by
        assert placed["rule"] == BRIDGE and placed["entity"] == film and placed["page_of"] == director
    assert set(result.evidence_set) >= {_hit(result, d).chunk.id for d in gold}


def test_without_the_evidence_set_the_reviews_bury_a_director(kb):
    """The control: plain fusion of the same paths ranks the reviews above a director's page,
    so the rule above is what keeps the set."""
    retriever = kb.retriever
    saved = retriever.settings
    retriever.settings = saved.model_copy(update={"evidence_set": False})
    try:
        result = retriever.retrieve(QUESTION, top_k=10)
    finally:
        retriever.settings = saved
    top5 = set(_docs(result, 5))
    assert not {"person-ilse-varga", "person-tomas-reyel"} <= top5
    assert all(h.placed_by["rule"] in ("fusion", "path_head") for h in result.hits)


def test_one_entity_question_gets_its_page_then_its_bridge(kb):
    result = kb.retriever.retrieve("Where was the director of The Copper Lantern born?", top_k=10)
    top = _docs(result, 3)
    assert "film-copper-lantern" in top and "person-ilse-varga" in top
    assert _hit(result, "person-ilse-varga").placed_by["page_of"] == "ilse varga"
    page = _hit(result, "film-copper-lantern").placed_by
    # Fusion may already have put the film's page first; otherwise the set placed it.
    assert page["rule"] in ("fusion", ENTITY_PAGE)


def test_graph_weight_follows_its_structure(kb):
    structured = kb.retriever.retrieve(QUESTION, top_k=10)
    assert structured.path_weights["graph"] == pytest.approx(1.0)
    assert "graph" not in structured.weight_reasons
    # Esbjerg is only mentioned, never a page title: the graph votes at the reduced weight.
    news = kb.retriever.retrieve("What did the harbour authority of Esbjerg approve?", top_k=5)
    assert news.path_weights["graph"] == pytest.approx(kb.settings.retrieval.unstructured_graph_weight)
    assert "page" in news.weight_reasons["graph"]
    assert news.evidence_set == []
    assert _docs(news, 1) == ["news-1"]
