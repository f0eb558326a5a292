"""Chunker: CJK sentence splitting, Markdown sections and fences, parent–child links, code."""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest

from kgrag.config import ChunkingSettings
from kgrag.ingest.chunking import Chunker
from kgrag.ingest.loaders import load
from kgrag.types import Chunk, Document

FIXTURES = Path(__file__).parent / "fixtures" / "docs"
GUIDE = FIXTURES / "permission_guide.md"

ZH_PARAGRAPH = (
    "权限管理是系统安全的基础。每个用户都必须被分配至少一个角色！角色决定了用户可以访问哪些资源？"
    "管理员可以创建、修改和删除用户；普通用户只能查看自己的资料。审计员负责检查操作日志，发现异常时及时报告。"
    "所有权限变更都会写入审计日志，日志保留一百八十天。临时权限在八小时后自动失效！"
)


def _chunker(child: int, overlap: int, parent: int, count=None) -> Chunker:
    return Chunker(ChunkingSettings(child_size=child, child_overlap=overlap, parent_size=parent), count)


def _doc(text: str, fmt: str = "txt", doc_id: str = "doc", **fields) -> Document:
    return Document(id=doc_id, source=f"{doc_id}.src", title="T", text=text, format=fmt, **fields)


def _searchable(chunks: list[Chunk]) -> list[Chunk]:
    return [c for c in chunks if not c.is_parent]


def _check_offsets(doc: Document, chunks: list[Chunk]) -> None:
    for chunk in chunks:
        assert doc.text[chunk.start : chunk.end] == chunk.text, chunk.id
        assert chunk.text == chunk.text.strip()


def _check_parent_links(chunks: list[Chunk]) -> None:
    parents = {c.id: c for c in chunks if c.is_parent}
    for chunk in _searchable(chunks):
        if chunk.parent_id is None:
            continue
        parent = parents[chunk.parent_id]
        assert parent.start <= chunk.start and chunk.end <= parent.end, chunk.id


# --- recursive splitting -------------------------------------------------------------------------


def test_chinese_paragraph_splits_at_sentence_ends_within_size():
    doc = _doc(ZH_PARAGRAPH)
    chunks = _chunker(child=60, overlap=0, parent=200).chunk(doc)
    children = _searchable(chunks)
    assert len(children) >= 3
    _check_offsets(doc, chunks)
    for child in children:
        assert len(child.text) <= 60
        assert child.text[-1] in "。！？；", child.text
    # Without overlap the children tile the text: every sentence is in exactly one child.
    assert "".join(c.text for c in children) == ZH_PARAGRAPH


def test_overlap_starts_at_a_sentence_or_clause_boundary():
    doc = _doc(ZH_PARAGRAPH)
    children = _searchable(_chunker(child=60, overlap=20, parent=200).chunk(doc))
    _check_offsets(doc, children)
    for previous, child in zip(children, children[1:], strict=False):
        shared = previous.end - child.start
        assert 0 < shared <= 20, (previous.text, child.text)
        assert doc.text[child.start - 1] in "。！？；，、", child.text


def test_overlong_sentence_without_punctuation_is_cut_hard_within_size():
    doc = _doc("权" * 250)
    children = _searchable(_chunker(child=100, overlap=0, parent=300).chunk(doc))
    assert [len(c.text) for c in children] == [100, 100, 50]


def test_english_sentences_and_abbreviations():
    text = " ".join(f"Sentence number {n} mentions e.g. the role of admins." for n in range(12))
    doc = _doc(text)
    children = _searchable(_chunker(child=120, overlap=0, parent=400).chunk(doc))
    _check_offsets(doc, children)
    for child in children:
        assert len(child.text) <= 120
        assert child.text.startswith("Sentence number") and child.text.endswith("admins.")


def test_token_unit_uses_the_given_counter():
    words = lambda s: len(s.split())  # noqa: E731 - a stand-in tokenizer: one token a word
    text = " ".join(f"word{n}" for n in range(500))
    chunks = _chunker(child=50, overlap=5, parent=200, count=words).chunk(_doc(text))
    assert all(words(c.text) <= 50 for c in _searchable(chunks))
    assert all(words(c.text) <= 200 for c in chunks if c.is_parent)
    with pytest.raises(ValueError, match="token counter"):
        Chunker(ChunkingSettings(unit="tokens"))


def test_short_records_are_single_standalone_chunks():
    passage = _doc(
        "Lomonosov Moscow State University is a public research university in Moscow. " * 7, "jsonl"
    )
    assert len(passage.text) < 800
    [chunk] = Chunker(ChunkingSettings()).chunk(passage)
    assert chunk.id == "doc#c0" and chunk.parent_id is None and not chunk.is_parent
    assert (chunk.start, chunk.end, chunk.page) == (0, len(passage.text.rstrip()), None)
    assert _chunker(100, 0, 200).chunk(_doc("  \n ")) == []


# --- markdown ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def guide() -> Document:
    [doc] = load(GUIDE)
    return doc


def test_markdown_section_paths(guide):
    chunks = _chunker(child=300, overlap=50, parent=800).chunk(guide)
    _check_offsets(guide, chunks)
    by_heading = {
        c.text.split("\n", 1)[0]: c.section_path for c in _searchable(chunks) if c.text.startswith("#")
    }
    assert by_heading == {
        "# 用户权限管理指南": "用户权限管理指南",
        "## 1. 基本概念": "用户权限管理指南 / 1. 基本概念",
        "## 2. 角色定义": "用户权限管理指南 / 2. 角色定义",
        "### 2.1 管理员": "用户权限管理指南 / 2. 角色定义 / 2.1 管理员",
        # 2.2 and 2.3 fit in one child together: the path is their common section.
        "### 2.2 普通用户": "用户权限管理指南 / 2. 角色定义",
        "## 3. 通过 API 分配角色": "用户权限管理指南 / 3. 通过 API 分配角色",
        "## 4. 常见问题": "用户权限管理指南 / 4. 常见问题",
    }
    code_chunk = next(c for c in chunks if "def assign_role" in c.text and not c.is_parent)
    assert code_chunk.section_path == "用户权限管理指南 / 3. 通过 API 分配角色"


def test_markdown_code_block_whole_and_headings_keep_their_body(guide):
    fence = re.search(r"```python\n.*?\n```", guide.text, re.S)
    assert fence is not None
    for child in _chunker(child=300, overlap=50, parent=800).chunk(guide):
        assert child.text.count("```") % 2 == 0, child.text  # never half a fence
        lines = child.text.split("\n")
        assert not lines[-1].startswith("#"), child.text  # a heading never ends a chunk
    holders = [c for c in _searchable(_chunker(300, 50, 800).chunk(guide)) if "def assign_role" in c.text]
    assert [c.text for c in holders] == [fence.group()]
    assert len(fence.group()) > 300  # longer than a child: kept whole as its own chunk


def test_parents_stay_inside_top_level_sections(guide):
    chunks = _chunker(child=300, overlap=50, parent=800).chunk(guide)
    _check_parent_links(chunks)
    section_starts = [m.start() for m in re.finditer(r"^## ", guide.text, re.M)]
    for chunk in chunks:
        crossed = [s for s in section_starts if chunk.start < s < chunk.end]
        assert crossed == [], chunk.id


def test_html_and_docx_formats_are_structure_aware():
    text = (
        "# Guide\n\n"
        + "## Part A\n\n"
        + "Alpha sentence here. " * 8
        + "\n\n## Part B\n\n"
        + "Beta words. " * 8
    )
    for fmt in ("html", "docx"):
        chunks = _chunker(child=200, overlap=0, parent=400).chunk(_doc(text, fmt))
        paths = {c.section_path for c in chunks}
        assert paths == {"Guide / Part A", "Guide / Part B"}, fmt


# --- parent–child --------------------------------------------------------------------------------


def test_parent_child_ids_links_and_determinism():
    text = "\n\n".join(ZH_PARAGRAPH for _ in range(6))
    doc = _doc(text, doc_id="corpus/zh.txt")
    chunks = _chunker(child=80, overlap=10, parent=300).chunk(doc)
    parents = [c for c in chunks if c.is_parent]
    children = _searchable(chunks)
    assert len(parents) >= 2
    assert [p.id for p in parents] == [f"corpus/zh.txt#p{j}" for j in range(len(parents))]
    assert [c.id for c in children] == [f"corpus/zh.txt#c{i}" for i in range(len(children))]
    assert all(c.parent_id in {p.id for p in parents} for c in children)
    assert all(len(p.text) <= 300 for p in parents) and all(len(c.text) <= 80 for c in children)
    _check_parent_links(chunks)
    _check_offsets(doc, chunks)
    assert {c.source for c in chunks} == {"corpus/zh.txt.src"} and {c.title for c in chunks} == {"T"}
    assert _chunker(child=80, overlap=10, parent=300).chunk(doc) == chunks


def test_document_between_child_and_parent_size_has_one_parent():
    doc = _doc(ZH_PARAGRAPH)  # 112 characters
    chunks = _chunker(child=60, overlap=0, parent=200).chunk(doc)
    assert [c.is_parent for c in chunks][0] is True
    assert chunks[0].text == ZH_PARAGRAPH
    assert all(c.parent_id == "doc#p0" for c in chunks[1:])


# --- code ----------------------------------------------------------------------------------------

PYTHON_SOURCE = '''"""Role helpers."""

import requests


def grant(user, role):
    """Give a role."""
    return requests.post("/roles", json={"user": user, "role": role})


def revoke(user, role):
    return requests.delete(f"/roles/{role}/{user}")


class RoleCache:
    """Remembers roles."""

    def __init__(self):
        self.roles = {}

    # Reads through the cache.
    def lookup(self, user):
        if user not in self.roles:
            self.roles[user] = requests.get(f"/users/{user}/roles").json()
            self.roles[user] = sorted(set(self.roles[user]))
        return self.roles[user]

    def forget(self, user):
        self.roles.pop(user, None)
        return None
'''


def test_python_split_at_definitions_with_names():
    doc = _doc(PYTHON_SOURCE, "code", doc_id="roles.py", metadata={"language": "python"})
    chunks = _chunker(child=300, overlap=20, parent=600).chunk(doc)
    _check_offsets(doc, chunks)
    _check_parent_links(chunks)
    children = _searchable(chunks)
    # Small adjacent functions are packed together; the big class is split at its methods.
    assert [(c.text.split("\n")[0], c.section_path, c.parent_id is None) for c in children] == [
        ('"""Role helpers."""', "grant, revoke", True),
        ("class RoleCache:", "RoleCache", False),
        ("# Reads through the cache.", "RoleCache.lookup", False),  # its comment stays with it
        ("def forget(self, user):", "RoleCache.forget", False),
    ]
    for name in ("def grant", "def revoke", "def lookup", "def forget"):
        assert sum(name in c.text for c in children) == 1, name
    # A method longer than a child is cut between its lines, never inside one.
    small = _searchable(_chunker(child=100, overlap=0, parent=600).chunk(doc))
    lookup = [c for c in small if c.section_path == "RoleCache.lookup"]
    assert len(lookup) >= 2 and all(doc.text[c.end] == "\n" for c in lookup)


def test_other_languages_split_at_column_zero_definitions():
    go = "package main\n\n" + "".join(
        f"// Handler{n} answers.\nfunc (s *Server) Handler{n}(w http.ResponseWriter) {{\n"
        + '\tw.Write([]byte("ok"))\n' * 4
        + "}\n\n"
        for n in range(4)
    )
    doc = _doc(go, "code", metadata={"language": "go"})
    children = _searchable(_chunker(child=200, overlap=0, parent=400).chunk(doc))
    assert [c.section_path for c in children] == ["Handler0", "Handler1", "Handler2", "Handler3"]
    assert children[1].text.startswith("// Handler1 answers.\nfunc (s *Server) Handler1(")


# --- invariants on random documents -------------------------------------------------------------

_PIECES = (
    "权限管理是系统安全的基础。",
    "每个用户都必须被分配至少一个角色！",
    "Admins manage users. ",
    "See e.g. the guide; ",
    "word " * 30,
    "\n\n",
    "\n",
    "# Title\n",
    "## Section A\n",
    "### Sub 1\n",
    "\n```python\ndef f():\n    return 1\n```\n",
    "\n~~~\n" + "x = 1\n" * 40 + "~~~\n",
    "，然后",
    ", then ",
    "长" * 150,
    "- item one\n",
    "> # quoted\n",
)


def test_invariants_on_random_mixed_documents():
    """Nothing lost, exact offsets, sizes kept, links right, fences whole — whatever the input."""
    rng = random.Random(7)
    for trial in range(400):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 40)))
        fmt = rng.choice(["txt", "md", "pdf", "code", "html"])
        child = rng.randint(50, 300)
        overlap = rng.randint(0, child - 1) if rng.random() < 0.7 else 0
        doc = _doc(text, fmt, metadata={"language": rng.choice(["python", "go"])})
        chunks = _chunker(child, overlap, rng.randint(max(child, 100), 900)).chunk(doc)
        _check_offsets(doc, chunks)
        _check_parent_links(chunks)
        covered = bytearray(len(text))
        for chunk in _searchable(chunks):
            covered[chunk.start : chunk.end] = b"\1" * (chunk.end - chunk.start)
            fenced = [line for line in chunk.text.split("\n") if line.startswith(("```", "~~~"))]
            if fmt in ("md", "html", "pdf"):  # a PDF's loader writes Markdown (kgrag/ingest/loaders/pdf.py)
                assert len(fenced) % 2 == 0, (trial, chunk.text)
            if len(chunk.text) > child:  # only a whole code fence may exceed a child
                assert fmt in ("md", "html", "pdf") and fenced, (trial, chunk.text)
        lost = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
        assert lost == [], (trial, fmt)


# --- speed ---------------------------------------------------------------------------------------


def test_chunking_five_thousand_passages_is_fast():
    passage = "Lomonosov Moscow State University is a public research university in Moscow. " * 7
    docs = [_doc(passage, "jsonl", doc_id=f"p{n}") for n in range(5000)]
    chunker = Chunker(ChunkingSettings())
    started = time.perf_counter()
    total = sum(len(chunker.chunk(doc)) for doc in docs)
    elapsed = time.perf_counter() - started
    assert total == 5000
    # Measured ~0.03 s; the bound is loose because the CPU is shared with other test runs.
    assert elapsed < 1.0, f"{elapsed:.2f}s"


def _level_table(rows: int) -> str:
    lines = ["## Layers", "", "| Level | Example | Scope of impact |", "|-------|---------|-----------------|"]
    lines += [f"| Level {i:02d} | [Example role number {i}](/job-families/role-{i}/) | Impact area {i} |"
              for i in range(rows)]
    return "\n".join(lines + ["", "Layers can be skipped."])


def test_a_chunk_opening_inside_a_table_carries_its_header():
    """Rows cut from their header keep its column names for BM25's heading field, the embedder
    and the extractive reader."""
    doc = _doc(_level_table(12), fmt="md")
    chunks = _chunker(200, 60, 600).chunk(doc)
    _check_offsets(doc, chunks)
    below_header, table_end = doc.text.index("|---"), doc.text.index("\n\nLayers")
    inside = [c for c in chunks if below_header < c.start < table_end]  # opening on a row (or half one)
    assert len(inside) >= 3
    for chunk in inside:
        assert chunk.table_header == "| Level | Example | Scope of impact |"
        assert "Scope of impact" in chunk.heading and "Scope of impact" in chunk.headed_text
    first = _searchable(chunks)[0]
    assert first.text.startswith("## Layers") and first.table_header == ""  # opens with the header itself
