"""A citation names the section and page its sentence is on, also inside a chunk that spans several.

Small sections share a chunk; the chunk's ``section_path`` is then their common ancestor
(what the ``section_path_prefix`` filter needs), and the chunker keeps each section's start
(``Chunk.section_at``) so that the answer can cite the exact one. Likewise a chunk over a page
break keeps ``page`` (where it starts) and each page's start (``Chunk.page_at``).
"""

from __future__ import annotations

from pathlib import Path

from kgrag.config import ChunkingSettings
from kgrag.ingest.chunking import Chunker
from kgrag.ingest.loaders import load
from kgrag.types import PAGES_KEY, SECTIONS_KEY
from tests.test_loaders import _two_page_pdf

GUIDE = Path(__file__).parent / "fixtures" / "docs" / "permission_guide.md"

HANDBOOK = """# Travel handbook

How employees book and claim travel.

## Booking

### Flights

Flights are booked through the Skyline portal at least fourteen days before departure.

### Hotels

Hotels are booked through Staybridge and may cost at most 180 euros per night.

### Trains

Train tickets are bought on the rail operator's site and claimed afterwards.

## Claims

Claims are filed in Expensa within thirty days of the trip, with every receipt attached.
"""


def test_a_chunk_over_several_sections_keeps_where_each_starts():
    [doc] = load(GUIDE)
    chunks = Chunker(ChunkingSettings(child_size=300, child_overlap=50, parent_size=800)).chunk(doc)
    both = next(c for c in chunks if not c.is_parent and c.text.startswith("### 2.2"))
    auditor = both.text.index("### 2.3")
    assert both.section_path == "用户权限管理指南 / 2. 角色定义"  # the common section, for filters
    assert both.section_at(0) == both.section_at(auditor - 1) == "用户权限管理指南 / 2. 角色定义 / 2.2 普通用户"
    assert both.section_at(auditor) == both.section_at(len(both.text)) == "用户权限管理指南 / 2. 角色定义 / 2.3 审计员"
    for chunk in chunks:
        starts = chunk.metadata.get(SECTIONS_KEY, [])
        assert len(starts) != 1, chunk.id  # one section: section_path says it all
        assert all(path.startswith(chunk.section_path) for _, path in starts)
        assert [at for at, _ in starts] == sorted({at for at, _ in starts})
        for at, path in starts[1:]:  # each later section starts at its heading
            assert chunk.text[at:].startswith("### " + path.rsplit(" / ", 1)[-1]), (chunk.id, at, path)
    single = next(c for c in chunks if not c.is_parent and c.text.startswith("### 2.1"))
    assert SECTIONS_KEY not in single.metadata
    assert single.section_at(10) == single.section_path == "用户权限管理指南 / 2. 角色定义 / 2.1 管理员"


def test_the_answer_cites_the_sub_section_its_sentence_comes_from(components, tmp_path):
    path = tmp_path / "travel.md"
    path.write_text(HANDBOOK, encoding="utf-8")
    assert not components.ingest_job().run([path], progress=False).failed
    question = "What may a hotel cost per night?"
    result = components.retriever.retrieve(question)
    answer = components.generator.answer(question, result.hits, abstain=result.below_threshold)
    [citation] = answer.citations
    assert "180 euros" in citation.snippet
    cited = next(h.chunk for h in result.hits if h.chunk.id == citation.chunk_id)
    assert "### Flights" in cited.text and "### Trains" in cited.text  # one chunk, three sections
    assert cited.section_path == "Travel handbook"
    assert citation.section_path == "Travel handbook / Booking / Hotels"


def test_a_sentence_of_the_parent_outside_the_matched_child_is_cited_by_the_parents_section():
    from kgrag.generate.citations import citation_for, split_sentences
    from kgrag.generate.types import Source
    from kgrag.retrieve.types import Hit

    [doc] = load(GUIDE)
    chunks = Chunker(ChunkingSettings(child_size=300, child_overlap=50, parent_size=800)).chunk(doc)
    child = next(c for c in chunks if not c.is_parent and c.text.startswith("### 2.1"))
    parent = next(c for c in chunks if c.id == child.parent_id)
    source = Source(n=1, hits=[Hit(chunk=child, score=1.0, parent=parent)], text=parent.text, offset=parent.start)
    auditor = next(s for s in split_sentences(parent.text) if s.text.startswith("审计员"))
    assert not child.start <= parent.start + auditor.start < child.end
    citation = citation_for(source, auditor)
    assert citation.chunk_id == child.id and citation.highlights == []
    assert citation.section_path == "用户权限管理指南 / 2. 角色定义 / 2.3 审计员"


def test_a_chunk_over_a_page_break_keeps_where_each_page_starts(tmp_path):
    _two_page_pdf(tmp_path / "fruit.pdf")
    [doc] = load(tmp_path / "fruit.pdf")
    [chunk] = Chunker(ChunkingSettings()).chunk(doc)  # one short chunk over both pages
    second = chunk.text.index("The second page")
    assert chunk.page == 1 and chunk.metadata[PAGES_KEY] == [[0, 1], [doc.pages[1][0] - chunk.start, 2]]
    assert chunk.page_at(0) == chunk.page_at(second - 1) == 1 and chunk.page_at(second) == 2
    small = Chunker(ChunkingSettings(child_size=60, child_overlap=0, parent_size=100)).chunk(doc)
    assert all(PAGES_KEY not in c.metadata for c in small if not c.is_parent)  # each on one page


def test_the_answer_cites_the_page_its_sentence_is_on(components, tmp_path):
    _two_page_pdf(tmp_path / "fruit.pdf")
    assert not components.ingest_job().run([tmp_path / "fruit.pdf"], progress=False).failed
    question = "What colour are bananas?"
    result = components.retriever.retrieve(question)
    answer = components.generator.answer(question, result.hits, abstain=result.below_threshold)
    [citation] = answer.citations
    assert "bananas" in citation.snippet  # a sentence of the second page
    assert next(h.chunk for h in result.hits if h.chunk.id == citation.chunk_id).page == 1
    assert citation.page == 2
