"""PDFs read by layout (kgrag/ingest/loaders/pdf.py) on a handbook built with reportlab
(tests/pdf_fixtures.py): headings become sections with paths, a ruled table that runs over a
page break is one Markdown table whose rows are answered with named columns, the running header
and footer are left out, and the title is the first heading when the metadata has none."""

from __future__ import annotations

import pytest

from kgrag.ingest.loaders import load
from tests.conftest import extractive_answer
from tests.pdf_fixtures import MEMBERS, security_handbook


@pytest.fixture(scope="module")
def handbook(tmp_path_factory):
    return security_handbook(tmp_path_factory.mktemp("pdf") / "handbook.pdf")


def test_headings_become_markdown_sections_and_the_title_is_the_first_heading(handbook):
    [doc] = load(handbook, "handbook.pdf")
    assert doc.title == "Security Handbook"  # the metadata says "(anonymous)"
    lines = doc.text.split("\n")
    assert [line for line in lines if line.startswith("#")] == [
        "# Security Handbook", "## Visitors", "### Badges", "## Escalation contacts", "## Incident reporting"]
    assert "Visitors Visitors" not in doc.text  # a heading is not glued to the next sentence
    assert "ACME Corp" not in doc.text and "Page 2" not in doc.text  # the running header and footer
    assert [page for _, page in doc.pages] == [1, 2, 3]


def test_chunks_carry_the_section_path_of_their_heading(components, handbook):
    [doc] = load(handbook, "handbook.pdf")
    chunks = components.chunker().chunk(doc)
    where = {c.section_path for c in chunks if "escorted at all times" in c.text}
    assert where == {"Security Handbook / Visitors"}
    badges = [c for c in chunks if "badges are yellow" in c.text]
    assert badges and all(c.section_path.startswith("Security Handbook / Visitors") for c in badges)
    reporting = [c for c in chunks if "confirms receipt" in c.text]
    assert [(c.section_path, c.page) for c in reporting] == [("Security Handbook / Incident reporting", 3)]


def test_a_table_over_a_page_break_is_one_markdown_table_with_its_header_on_each_page(handbook):
    [doc] = load(handbook, "handbook.pdf")
    second = doc.text[doc.pages[1][0]:doc.pages[2][0]]
    assert second.startswith("| Member | Channel |\n| --- | --- |\n")
    rows = [line for line in doc.text.split("\n") if line.startswith("| ") and "---" not in line]
    assert rows.count("| Member | Channel |") == 2
    assert [r for r in rows if r != "| Member | Channel |"] == [f"| {m} | {c} |" for m, c in MEMBERS]


def test_a_table_row_past_the_page_break_is_answered_with_named_columns(components, handbook):
    report = components.ingest_job().run([handbook], progress=False)
    assert report.ok, report.failed
    answer = extractive_answer(components, "What is the Slack channel for the CLO?")
    assert "Member: CLO; Channel: #legal" in answer.text, answer.text
    assert {c.section_path for c in answer.citations} == {"Security Handbook / Escalation contacts"}
