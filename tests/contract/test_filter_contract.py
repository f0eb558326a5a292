"""Filter contract: for every chunk-index engine, a filtered search returns exactly the chunks
``SearchFilter.matches`` (the reference) keeps from the unfiltered corpus.

The corpus is built to catch translations that are almost right: section paths and ids that a
LIKE pattern (``%``, ``_``), a wildcard or regexp query (``*``, ``?``, ``.``, ``\\``), a
case-folding comparison, or a byte-counting prefix (CJK, an emoji) would wrongly match. Each
search runs once per filter case and every disagreement is listed at the end. Document facets
(``kgrag.facets``) include the unknown (a document without them, as a knowledge base built before
they were recorded), case variants of a tag, and malformed values every engine must read as
unknown.
"""

from __future__ import annotations

import numpy as np
import pytest

from kgrag.stores.base import ChunkIndex
from kgrag.stores.filters import SearchFilter
from kgrag.types import Chunk

from .conftest import DIM

WORD = "filterable"  # in every chunk's text: a BM25 query for it reaches every searchable chunk

# (doc_id, source, section paths): one searchable chunk per section path.
DOCUMENTS = [
    ("guide", "docs/guide.md", ["Guide / 2. Setup", "Guide / 2.1 Linux", "Guide / 20. Appendix", ""]),
    ("Guide", "docs/Guide.md", ["guide / 2. lower case", "GUIDE"]),
    ("g_ide", "docs/guide_md", ["100% covered / notes", "100 percent", "1000"]),
    ("gXide", "docs/guideXmd", ["snake_case / a", "snakeXcase"]),
    ("what?", "docs/*.md", ["what? / b", "whatX", "star* / c", "starry"]),
    ("100%", "C:\\docs\\x.txt", ["back\\slash / d", "backXslash", "back\\\\double"]),
    ("zh-树", "docs/算法.md", ["树 > 最近公共祖先", "树 > 搜索", "树木", "Ünïcode / é", "Unicode"]),
    ("emoji 😀", "docs/emoji 😀.md", ["😀 emoji / x", "😀😀", "x😀"]),
]


# Facets per document id; a document not listed has none (unknown on every facet).
FACETS: dict[str, dict] = {
    "guide": {"language": "en", "doc_type": "markdown", "tags": ["setup", "Linux"], "date": "2023-01-01",
              "date_source": "front_matter"},
    "Guide": {"language": "en", "doc_type": "pdf", "tags": ["linux"], "date": "2023-12-31", "date_source": "field"},
    "g_ide": {"language": "mixed", "doc_type": "pdf", "tags": [], "date": "2022-12-31", "date_source": "mtime"},
    "gXide": {"language": "en", "doc_type": "text", "date": "2024-02-29", "date_source": "field"},
    "what?": {"language": "EN", "doc_type": "PDF", "tags": ["setup%", "set_up"], "date": "2023-6-1"},  # malformed day
    "zh-树": {"language": "zh", "doc_type": "markdown", "tags": ["算法", "树"], "date": "2023-06-15",
             "date_source": "front_matter"},
    "emoji 😀": {"language": ["en"], "doc_type": 5, "tags": "setup", "date": 20230101},  # wrong types: unknown
}


def _corpus() -> list[Chunk]:
    chunks = []
    for doc_id, source, paths in DOCUMENTS:
        parent = f"{doc_id}#parent"
        facets = FACETS.get(doc_id, {})
        # A parent matches the same filters as its children and must never come back.
        chunks.append(Chunk(id=parent, doc_id=doc_id, source=source, section_path=paths[0],
                            text=f"{WORD} parent of {doc_id}", is_parent=True, ordinal=0, metadata=dict(facets)))
        for i, path in enumerate(paths, start=1):
            chunks.append(Chunk(id=f"{doc_id}#{i}", doc_id=doc_id, source=source, section_path=path,
                                text=f"{WORD} chunk {i} of {doc_id}", parent_id=parent, ordinal=i,
                                metadata=dict(facets)))
    return chunks


CORPUS = _corpus()
SEARCHABLE = [c for c in CORPUS if c.searchable]
VECTORS = np.random.default_rng(7).normal(size=(len(SEARCHABLE), DIM)).astype(np.float32)
VECTORS /= np.linalg.norm(VECTORS, axis=1, keepdims=True)

PREFIXES = [
    "", "Guide / 2.", "Guide / 2", "Guide", "guide", "GUIDE", "Guide / 2. Setup", "Guide / 2. Setup and more",
    "100%", "100", "%", "1000", "snake_", "snake_case", "_", "what?", "?", "star*", "star", "*",
    "back\\", "back\\slash", "back\\\\", "\\", "树", "树 > ", "树 > 最近", "树木", "Ünï", "U", "😀", "😀 emoji", "x😀",
    "nothing starts like this",
]
DOC_IDS = sorted({d for d, _, _ in DOCUMENTS})
SOURCES = sorted({s for _, s, _ in DOCUMENTS})

CASES: list[dict] = [
    {},
    *({"doc_id": d} for d in DOC_IDS),
    {"doc_id": "no-such-doc"},
    {"doc_id": ["guide", "Guide"]},
    {"doc_id": ["g_ide", "100%", "emoji 😀"]},
    {"doc_id": ["zh-树"]},
    {"doc_id": DOC_IDS},
    {"doc_id": ["no-such-doc", "what?"]},
    *({"source": s} for s in SOURCES),
    {"source": "docs/GUIDE.md"},
    {"source": "docs/%"},
    {"source": "docs/"},
    *({"section_path_prefix": p} for p in PREFIXES),
    {"doc_id": "guide", "section_path_prefix": "Guide / 2."},
    {"doc_id": ["guide", "Guide"], "section_path_prefix": "guide"},
    {"source": "docs/算法.md", "section_path_prefix": "树 > "},
    {"doc_id": "100%", "source": "C:\\docs\\x.txt", "section_path_prefix": "back\\"},
    {"doc_id": "guide", "source": "docs/Guide.md"},  # contradictory: nothing
    {"doc_id": ["what?", "gXide"], "source": "docs/*.md", "section_path_prefix": "star"},
    # facets
    {"language": "en"}, {"language": "zh"}, {"language": ["en", "mixed"]}, {"language": "EN"}, {"language": "other"},
    {"doc_type": "pdf"}, {"doc_type": ["markdown", "text"]}, {"doc_type": "PDF"}, {"doc_type": "5"},
    {"tags": "linux"}, {"tags": "Linux"}, {"tags": ["setup", "树"]}, {"tags": "setup%"}, {"tags": "set"},
    {"tags": ["no-such-tag"]},
    {"date_from": "2023-01-01"}, {"date_to": "2023-01-01"}, {"date_from": "2023-01-01", "date_to": "2023-12-31"},
    {"date_from": "2023-01-02", "date_to": "2023-12-30"}, {"date_from": "2024-02-29", "date_to": "2024-02-29"},
    {"date_from": "2025-01-01"}, {"date_to": "1999-12-31"},
    {"date_from": "2024-01-01", "date_to": "2023-01-01"},  # reversed: an empty range, matches nothing
    {"language": "en", "doc_type": "pdf", "date_from": "2023-06-01"},
    {"doc_id": ["guide", "zh-树"], "tags": "树", "section_path_prefix": "树"},
    {"doc_type": "markdown", "date_to": "2023-03-01", "tags": ["setup", "linux"]},
]


def _expected(f: SearchFilter | None) -> set[str]:
    return {c.id for c in SEARCHABLE if f is None or f.matches(c)}


@pytest.fixture
def filled(chunk_index: ChunkIndex) -> ChunkIndex:
    chunk_index.upsert(CORPUS, VECTORS)
    return chunk_index


def _disagreements(search) -> list[str]:
    out = []
    for raw in [None, *CASES]:
        f = SearchFilter.parse(raw)
        got, want = {h.id for h in search(f)}, _expected(f)
        if got != want:
            out.append(f"{raw!r}: extra {sorted(got - want)}, missing {sorted(want - got)}")
    return out


def test_the_cases_exercise_every_key_and_both_outcomes():
    """Guards the corpus itself: each key appears, and cases keep some, all and none."""
    kept = [len(_expected(SearchFilter.parse(raw))) for raw in CASES]
    assert {k for raw in CASES for k in raw} == set(SearchFilter.model_fields)
    assert 0 in kept and len(SEARCHABLE) in kept and any(0 < n < len(SEARCHABLE) for n in kept)
    # The traps trap: a LIKE, wildcard or case-folding reading of these would keep more.
    assert _expected(SearchFilter(section_path_prefix="Guide / 2.")) == {"guide#1", "guide#2"}
    assert _expected(SearchFilter(section_path_prefix="100%")) == {"g_ide#1"}
    assert _expected(SearchFilter(section_path_prefix="snake_")) == {"gXide#1"}
    assert _expected(SearchFilter(section_path_prefix="what?")) == {"what?#1"}
    assert _expected(SearchFilter(section_path_prefix="star*")) == {"what?#3"}
    assert _expected(SearchFilter(section_path_prefix="back\\")) == {"100%#1", "100%#3"}
    assert _expected(SearchFilter(section_path_prefix="树 > ")) == {"zh-树#1", "zh-树#2"}
    # Facets: exact and case-sensitive, any-of tags, inclusive days, malformed values unknown.
    assert {c.split("#")[0] for c in _expected(SearchFilter.parse({"tags": "linux"}))} == {"Guide"}
    assert {c.split("#")[0] for c in _expected(SearchFilter.parse({"doc_type": "pdf"}))} == {"Guide", "g_ide"}
    in_2023 = SearchFilter.parse({"date_from": "2023-01-01", "date_to": "2023-12-31"})
    assert {c.split("#")[0] for c in _expected(in_2023)} == {"guide", "Guide", "zh-树"}
    assert not _expected(SearchFilter.parse({"tags": "set"})) and not _expected(SearchFilter.parse({"doc_type": "5"}))


def test_bm25_returns_what_the_reference_keeps(filled):
    problems = _disagreements(lambda f: filled.search_bm25(WORD, 100, f))
    assert not problems, "\n".join(problems)


def test_dense_returns_what_the_reference_keeps(filled):
    problems = _disagreements(lambda f: filled.search_dense(VECTORS[0], 100, f))
    assert not problems, "\n".join(problems)


def test_facet_catalog_lists_what_the_searchable_chunks_carry(filled):
    """Distinct doc types and tags, and the date span, read as ``matches`` reads them: a value
    of the wrong type or a malformed day is not in the catalog."""
    catalog = filled.facet_catalog()
    assert catalog.doc_types == {"markdown", "pdf", "text", "PDF"}
    assert catalog.tags == {"setup", "Linux", "linux", "setup%", "set_up", "算法", "树"}
    assert (catalog.date_min, catalog.date_max) == ("2022-12-31", "2024-02-29")
    assert catalog.overlaps("2023-01-01", "2023-12-31") and not catalog.overlaps("2025-01-01", None)
