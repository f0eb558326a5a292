"""Loaders on real files built in tmp_path (reportlab PDFs, python-docx documents, ...)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import docx
import pytest
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from reportlab.pdfgen import canvas

from kgrag.config import ChunkingSettings
from kgrag.ingest.chunking import Chunker
from kgrag.ingest.loaders import SUPPORTED_SUFFIXES, LoadError, discover, document_id, load
from kgrag.text.markdown_tables import table_lines

FIXTURES = Path(__file__).parent / "fixtures" / "docs"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """Document ids are relative to the working directory: work inside tmp_path."""
    monkeypatch.chdir(tmp_path)


def _load_error(path: Path) -> LoadError:
    with pytest.raises(LoadError) as caught:
        load(path)
    return caught.value


# --- plain text ------------------------------------------------------------------------------


def test_txt_strips_bom_normalizes_newlines_and_hashes_title_and_text(tmp_path):
    (tmp_path / "notes.txt").write_bytes(b"\xef\xbb\xbfHello\r\nWorld\r\n")
    [doc] = load(Path("notes.txt"), "notes.txt")
    assert doc.id == "notes.txt" and doc.source == "notes.txt"
    [alone] = load(Path("notes.txt"))  # no id given: the absolute path, never relative to the cwd
    assert alone.id == (tmp_path / "notes.txt").as_posix()
    assert doc.text == "Hello\nWorld\n"
    assert doc.title == "notes" and doc.format == "txt" and doc.pages == []
    assert doc.hash == hashlib.sha256(b"notes\nHello\nWorld\n").hexdigest()


def test_txt_in_gbk_is_detected(tmp_path):
    sentence = "这是一个用国标码编码的中文文本文件，用来测试编码检测功能是否正常工作。"
    (tmp_path / "gbk.txt").write_bytes(sentence.encode("gbk"))
    assert load(tmp_path / "gbk.txt")[0].text == sentence


def test_same_content_same_hash_changed_content_new_hash(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("one two three")
    first = load(path)[0].hash
    assert load(path)[0].hash == first
    path.write_text("one two four")
    assert load(path)[0].hash != first


def test_id_is_absolute_for_files_outside_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "outside.txt").write_text("text")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    [doc] = load(tmp_path / "outside.txt")
    assert doc.id == (tmp_path / "outside.txt").resolve().as_posix()


def test_empty_file_is_an_error(tmp_path):
    (tmp_path / "empty.txt").write_text("  \n")
    assert _load_error(tmp_path / "empty.txt").reason == "no text (empty file)"


# --- markdown, html, code ----------------------------------------------------------------------


def test_markdown_keeps_source_and_takes_first_heading_as_title():
    [doc] = load(FIXTURES / "permission_guide.md")
    assert doc.format == "md"
    assert doc.title == "用户权限管理指南"
    assert doc.text.startswith("# 用户权限管理指南\n")
    assert "```python" in doc.text


def test_markdown_without_heading_uses_stem_and_ignores_hash_in_code(tmp_path):
    (tmp_path / "setup.md").write_text("```sh\n# not a heading\n```\nplain text\n")
    assert load(tmp_path / "setup.md")[0].title == "setup"


def test_html_becomes_markdown_without_script_style_nav(tmp_path):
    (tmp_path / "page.html").write_text(
        "<html><head><title>Portal help</title><style>p{color:red}</style></head><body>"
        "<nav>Home | About</nav><h1>Roles</h1><p>Admins manage <b>users</b>.</p>"
        "<script>track()</script><h2>API</h2><p>Call it like this:</p>"
        '<pre><code class="language-python">assign_role(user, "auditor")\n</code></pre>'
        "<table><tr><th>role</th><th>scope</th></tr><tr><td>admin</td><td>all</td></tr></table>"
        "</body></html>",
        encoding="utf-8",
    )
    [doc] = load(tmp_path / "page.html")
    assert doc.format == "html" and doc.title == "Portal help"
    assert doc.text == (
        "# Roles\n\nAdmins manage users.\n\n## API\n\nCall it like this:\n\n"
        '```python\nassign_role(user, "auditor")\n```\n\n| role | scope |\n| --- | --- |\n| admin | all |'
    )
    chunks = Chunker(ChunkingSettings(child_size=50, child_overlap=0, parent_size=100)).chunk(doc)
    paths = {c.section_path for c in chunks if "assign_role" in c.text}
    assert paths == {"Roles / API"}


def test_an_html_definition_list_becomes_bold_terms_with_their_definitions(tmp_path):
    """<dl> glossaries, and paragraphs opening with bold words, read as Markdown glossaries do
    ("**Term**: definition"): the shape the term extractor takes for a defined term. A <dd>
    without its <dt>, bold with nothing after it, and bold inside a sentence stay plain text."""
    (tmp_path / "glossary.html").write_text(
        "<h1>Glossary</h1><dl><dt>Tenant</dt><dd>An isolated customer space.</dd>"
        "<dt>RBAC</dt><dd>Role-based access control.</dd><dd>Roles hold permissions.</dd></dl>"
        "<dl><dd>Orphan description.</dd></dl><p><b>SSO</b>: single sign-on.</p><p><b>Bold alone</b></p>"
        "<p>Admins manage <b>users</b>.</p>", encoding="utf-8")
    assert load(tmp_path / "glossary.html")[0].text == (
        "# Glossary\n\n**Tenant**: An isolated customer space.\n\n"
        "**RBAC**: Role-based access control. Roles hold permissions.\n\nOrphan description.\n\n"
        "**SSO**: single sign-on.\n\nBold alone\n\nAdmins manage users.")


def test_markdown_html_tables_become_markdown_tables_outside_code(tmp_path):
    (tmp_path / "roles.md").write_text(
        "# Roles\n\nIntro.\n<table><thead><tr><th>Role</th><th>Owner</th></tr></thead><tbody>"
        '<tr><td><a href="/plans">Success Plans</a></td><td>CSM<br>team</td></tr></tbody></table>\nAfter.\n\n'
        "```html\n<table><tr><td>kept</td></tr></table>\n```\n", encoding="utf-8")
    assert load(tmp_path / "roles.md")[0].text == (
        "# Roles\n\nIntro.\n\n| Role | Owner |\n| --- | --- |\n| Success Plans | CSM team |\n\nAfter.\n\n"
        "```html\n<table><tr><td>kept</td></tr></table>\n```\n")


def test_code_file_records_language(tmp_path):
    (tmp_path / "util.py").write_text("def f():\n    return 1\n")
    [doc] = load(tmp_path / "util.py")
    assert (doc.format, doc.title, doc.metadata) == ("code", "util.py", {"language": "python"})


# --- pdf ---------------------------------------------------------------------------------------


def _two_page_pdf(path: Path) -> None:
    pdf = canvas.Canvas(str(path))
    pdf.setTitle("Fruit report")
    pdf.drawString(72, 720, "The first page is about apples. Apples grow on trees.")
    pdf.showPage()
    pdf.drawString(72, 720, "The second page is about bananas. Bananas are yellow.")
    pdf.showPage()
    pdf.save()


def test_pdf_text_per_page_and_chunk_pages(tmp_path):
    _two_page_pdf(tmp_path / "fruit.pdf")
    [doc] = load(tmp_path / "fruit.pdf")
    assert doc.format == "pdf" and doc.title == "Fruit report"
    assert [page for _, page in doc.pages] == [1, 2]
    second_start = doc.pages[1][0]
    assert doc.text[second_start:].startswith("The second page is about bananas.")
    chunks = Chunker(ChunkingSettings(child_size=60, child_overlap=0, parent_size=100)).chunk(doc)
    pages = {c.text: c.page for c in chunks if not c.is_parent}
    assert pages == {
        "The first page is about apples. Apples grow on trees.": 1,
        "The second page is about bananas. Bananas are yellow.": 2,
    }


def test_corrupt_pdf(tmp_path):
    (tmp_path / "broken.pdf").write_bytes(os.urandom(2048))
    error = _load_error(tmp_path / "broken.pdf")
    assert error.path == str(tmp_path / "broken.pdf")
    assert error.reason.startswith("not a valid PDF: ")


def test_pdf_without_text_layer(tmp_path):
    pdf = canvas.Canvas(str(tmp_path / "scan.pdf"))
    pdf.rect(72, 72, 300, 300, fill=1)  # an image-like page: drawing, no text
    pdf.showPage()
    pdf.save()
    assert _load_error(tmp_path / "scan.pdf").reason == "no text layer (scanned PDF?)"


# --- docx --------------------------------------------------------------------------------------


def test_docx_headings_lists_and_tables(tmp_path):
    document = docx.Document()
    document.add_heading("Heading One", level=1)
    document.add_paragraph("Admins manage users.")
    document.add_paragraph("rotate keys", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    for (row, col), value in {(0, 0): "role", (0, 1): "scope", (1, 0): "admin", (1, 1): "all"}.items():
        table.cell(row, col).text = value
    document.add_heading("Heading Two", level=2)
    document.add_paragraph("Auditors read logs.")
    document.save(tmp_path / "guide.docx")
    [doc] = load(tmp_path / "guide.docx")
    assert doc.format == "docx" and doc.title == "Heading One"
    assert doc.text == (
        "# Heading One\n\nAdmins manage users.\n\n- rotate keys\n\n| role | scope |\n| admin | all |"
        "\n\n## Heading Two\n\nAuditors read logs."
    )  # no header row marked: rows only


def test_a_docx_or_html_table_is_a_markdown_table_with_its_marked_header(tmp_path):
    """A header Word repeats on each page or writes in bold, or HTML's <th> / <thead>, heads the
    Markdown table the readers of tables read (its columns name each row's cells)."""
    document = docx.Document()
    table = document.add_table(rows=3, cols=2)
    for (row, col), value in {(0, 0): "Member", (0, 1): "Channel", (1, 0): "CFO", (1, 1): "#finance",
                              (2, 0): "CLO", (2, 1): "#legal | #compliance"}.items():
        table.cell(row, col).paragraphs[0].add_run(value).bold = row == 0
    document.save(tmp_path / "bold.docx")
    repeated = docx.Document(tmp_path / "bold.docx")
    for run in (r for cell in repeated.tables[0].rows[0].cells for p in cell.paragraphs for r in p.runs):
        run.bold = False
    repeated.tables[0].rows[0]._tr.get_or_add_trPr().append(OxmlElement("w:tblHeader"))
    repeated.save(tmp_path / "repeated.docx")
    expected = "| Member | Channel |\n| --- | --- |\n| CFO | #finance |\n| CLO | #legal / #compliance |"
    assert load(tmp_path / "bold.docx")[0].text == expected
    assert load(tmp_path / "repeated.docx")[0].text == expected
    (tmp_path / "page.html").write_text(
        "<table><thead><tr><td>Member</td><td>Channel</td></tr></thead>"
        "<tr><td>CFO</td><td>#finance</td></tr><tr><td>CLO</td><td>#legal | #compliance</td></tr></table>",
        encoding="utf-8")
    assert load(tmp_path / "page.html")[0].text == expected
    [row] = [line for line in table_lines(expected) if line.cells[0] == "CFO"]
    assert row.header == ("Member", "Channel")


def test_a_docx_paragraph_opening_in_bold_keeps_its_bold_term(tmp_path):
    """"Tenant – an isolated customer space" with "Tenant" in bold is a glossary entry: the bold
    is kept as Markdown's, which the term extractor reads; a paragraph all in bold is not."""
    document = docx.Document()
    entry = document.add_paragraph()
    entry.add_run("Tenant").bold = True
    entry.add_run(" – an isolated customer space.")
    document.add_paragraph().add_run("All of this paragraph is bold.").bold = True
    document.save(tmp_path / "glossary.docx")
    assert load(tmp_path / "glossary.docx")[0].text == (
        "**Tenant** – an isolated customer space.\n\nAll of this paragraph is bold.")


def test_docx_headings_by_chinese_style_name_or_outline_level(tmp_path):
    """A heading is a heading whatever its style is called: "标题 2" (WPS Office, a localised
    Word) or a custom style Word gives an outline level; their sections are kept."""
    from docx.enum.style import WD_STYLE_TYPE

    document = docx.Document()
    document.styles.add_style("标题 2", WD_STYLE_TYPE.PARAGRAPH)
    custom = document.styles.add_style("Section Title", WD_STYLE_TYPE.PARAGRAPH)
    outline = OxmlElement("w:outlineLvl")
    outline.set(qn("w:val"), "1")
    custom.element.get_or_add_pPr().append(outline)
    document.add_heading("Guide", level=1)
    document.add_paragraph("角色定义", style="标题 2")
    document.add_paragraph("管理员拥有全部权限。")
    document.add_paragraph("Key rotation", style="Section Title")
    document.add_paragraph("Keys rotate daily.")
    document.save(tmp_path / "guide.docx")
    [doc] = load(tmp_path / "guide.docx")
    assert doc.text == "# Guide\n\n## 角色定义\n\n管理员拥有全部权限。\n\n## Key rotation\n\nKeys rotate daily."
    chunks = Chunker(ChunkingSettings(child_size=50, child_overlap=0, parent_size=100)).chunk(doc)
    assert {c.section_path for c in chunks if "Keys rotate" in c.text} == {"Guide / Key rotation"}


def test_corrupt_docx(tmp_path):
    (tmp_path / "broken.docx").write_bytes(b"this is not a zip file")
    assert _load_error(tmp_path / "broken.docx").reason.startswith("not a valid .docx file")


# --- csv ---------------------------------------------------------------------------------------


def test_csv_one_document_per_row(tmp_path):
    (tmp_path / "people.csv").write_text("id,name,role\nu-1,Alice,admin\n,Bob,\n")
    alice, bob = load(Path("people.csv"), "people.csv")
    assert (alice.id, alice.title, alice.text) == ("u-1", "Alice", "id: u-1\nname: Alice\nrole: admin")
    assert (bob.id, bob.title, bob.text) == ("people.csv#row2", "Bob", "name: Bob")
    assert alice.source == bob.source == "people.csv"
    assert alice.format == "csv" and alice.hash != bob.hash


def test_csv_bad_rows_fail_the_file(tmp_path):
    (tmp_path / "dup.csv").write_text("id,text\na,x\na,y\n")
    assert _load_error(tmp_path / "dup.csv").reason == "duplicate id 'a' on rows 1 and 2"
    (tmp_path / "wide.csv").write_text("a,b\n1,2,3\n")
    assert _load_error(tmp_path / "wide.csv").reason == "line 2: 3 fields but the header has 2"


# --- pptx --------------------------------------------------------------------------------------


def _deck(path: Path) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Access reviews"
    body = first.placeholders[1].text_frame
    body.text = "Every quarter"
    point = body.add_paragraph()
    point.text, point.level = "Managers confirm each role", 1
    first.notes_slide.notes_text_frame.text = "The CISO signs off the review."
    deck.slides.add_slide(deck.slide_layouts[6])  # blank: nothing to cite on it
    third = deck.slides.add_slide(deck.slide_layouts[5])
    third.shapes.title.text = "Channels"
    table = third.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(4), Inches(1.5)).table
    for i, row in enumerate([("Member", "Channel"), ("CFO", "#finance"), ("CLO", "#legal")]):
        for j, value in enumerate(row):
            table.cell(i, j).text = value
    deck.save(path)


def test_pptx_a_section_per_slide_with_notes_tables_and_slide_numbers(tmp_path):
    _deck(tmp_path / "review.pptx")
    [doc] = load(tmp_path / "review.pptx")
    assert doc.format == "pptx" and doc.title == "Access reviews"
    assert doc.text == ("## Access reviews\n\nEvery quarter\n- Managers confirm each role\n\n"
                        "Notes: The CISO signs off the review.\n\n"
                        "## Channels\n\n| Member | Channel |\n| --- | --- |\n| CFO | #finance |\n| CLO | #legal |")
    assert doc.pages == [(0, 1), (doc.text.index("## Channels"), 3)]  # slide 2 was blank
    chunks = Chunker(ChunkingSettings(child_size=60, child_overlap=0, parent_size=120)).chunk(doc)
    legal = [c for c in chunks if "#legal" in c.text and not c.is_parent]
    assert legal and all(c.page == 3 and c.section_path == "Channels" for c in legal)


def test_corrupt_pptx(tmp_path):
    (tmp_path / "broken.pptx").write_bytes(b"this is not a zip file")
    assert _load_error(tmp_path / "broken.pptx").reason.startswith("not a valid .pptx file")


# --- eml ---------------------------------------------------------------------------------------

MAIL = """From: Ana Lima <ana@example.com>
To: ops@example.com, Bo Chen <bo@example.com>
Subject: Decision: keys rotate every 90 days
Date: Tue, 14 Oct 2025 09:30:00 +0200
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b1"

--b1
Content-Type: multipart/alternative; boundary="b2"

--b2
Content-Type: text/plain; charset=utf-8

We agreed today: API keys rotate every 90 days.

--b2
Content-Type: text/html; charset=utf-8

<p>We agreed today: <b>API keys</b> rotate every 90 days.</p>
--b2--

--b1
Content-Type: application/pdf; name="schedule.pdf"
Content-Disposition: attachment; filename="schedule.pdf"
Content-Transfer-Encoding: base64

JVBERi0xLjQK
--b1--
"""


def test_eml_subject_people_body_and_date(tmp_path):
    (tmp_path / "decision.eml").write_text(MAIL, encoding="utf-8")
    [doc] = load(tmp_path / "decision.eml")
    assert (doc.title, doc.format, doc.metadata["date"]) == ("Decision: keys rotate every 90 days", "eml", "2025-10-14")
    assert doc.text == ("From: Ana Lima <ana@example.com>\nTo: ops@example.com, Bo Chen <bo@example.com>\n"
                        "Attachments: schedule.pdf\n\nWe agreed today: API keys rotate every 90 days.")


def test_eml_with_only_html_reads_it_as_markdown_and_without_headers_fails(tmp_path):
    (tmp_path / "html.eml").write_text("Subject: Glossary\nContent-Type: text/html; charset=utf-8\n\n"
                                       "<h2>Terms</h2><p><b>Tenant</b>: an isolated space.</p>", encoding="utf-8")
    assert load(tmp_path / "html.eml")[0].text == "## Terms\n\n**Tenant**: an isolated space."
    (tmp_path / "empty.eml").write_bytes(b"")
    assert _load_error(tmp_path / "empty.eml").reason == "not an e-mail message (no headers)"


# --- ipynb -------------------------------------------------------------------------------------


def test_ipynb_markdown_and_code_cells_without_outputs(tmp_path):
    notebook = {
        "nbformat": 4, "metadata": {"kernelspec": {"language": "python"}, "language_info": {"name": "python"}},
        "cells": [
            {"cell_type": "markdown", "source": ["# Churn model\n", "\n", "We score each account weekly."]},
            {"cell_type": "code", "source": "scores = model.predict(accounts)",
             "outputs": [{"output_type": "stream", "text": ["0.93\n"]}]},
            {"cell_type": "markdown", "source": "## Thresholds\n\nAbove 0.8 an account is called."},
            {"cell_type": "raw", "source": "left out"},
            {"cell_type": "code", "source": []},
        ],
    }
    (tmp_path / "churn.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    [doc] = load(tmp_path / "churn.ipynb")
    assert (doc.title, doc.format, doc.metadata) == ("Churn model", "ipynb", {"language": "python"})
    assert doc.text == ("# Churn model\n\nWe score each account weekly.\n\n```python\nscores = model.predict(accounts)\n```"
                        "\n\n## Thresholds\n\nAbove 0.8 an account is called.")
    chunks = Chunker(ChunkingSettings(child_size=60, child_overlap=0, parent_size=120)).chunk(doc)
    assert {c.section_path for c in chunks if "0.8" in c.text and not c.is_parent} == {"Churn model / Thresholds"}
    (tmp_path / "broken.ipynb").write_text("{not json", encoding="utf-8")
    assert _load_error(tmp_path / "broken.ipynb").reason.startswith("not a notebook: invalid JSON")
    (tmp_path / "other.ipynb").write_text("[1, 2]", encoding="utf-8")
    assert _load_error(tmp_path / "other.ipynb").reason == "not a notebook: no 'cells' list (nbformat 4 is read)"


# --- xlsx --------------------------------------------------------------------------------------


def _workbook(path: Path) -> None:
    import datetime as dt

    from openpyxl import Workbook

    book = Workbook()
    contacts = book.active
    contacts.title = "Contacts"
    contacts.append([None, None, None])  # a blank first row: the header is the first with text
    contacts.append(["Member", "Channel", "Since", "Seats"])
    contacts.append(["CFO", "#finance", dt.datetime(2024, 2, 1), 3])
    contacts.append([None, None, None, None])
    contacts.append(["CLO", "#legal", dt.date(2023, 7, 15), "=2+2"])
    glossary = book.create_sheet("Glossary")
    glossary.append(["id", "name", "meaning"])
    glossary.append(["sso", "SSO", "Single sign-on"])
    hidden = book.create_sheet("Scratch")
    hidden.append(["note"])
    hidden.append(["not for the knowledge base"])
    hidden.sheet_state = "hidden"
    book.save(path)


def test_xlsx_one_document_per_row_of_each_visible_sheet(tmp_path):
    _workbook(tmp_path / "team.xlsx")
    cfo, clo, sso = load(tmp_path / "team.xlsx")
    source = document_id(tmp_path / "team.xlsx")
    assert (cfo.id, cfo.title, cfo.text) == (f"{source}#Contacts#row1", "",
                                             "Member: CFO\nChannel: #finance\nSince: 2024-02-01\nSeats: 3")
    assert clo.id == f"{source}#Contacts#row2" and "Since: 2023-07-15" in clo.text
    assert (sso.id, sso.title, sso.text) == ("sso", "SSO", "id: sso\nname: SSO\nmeaning: Single sign-on")
    assert cfo.metadata == {"sheet": "Contacts", "row": 1} and cfo.format == "xlsx" and cfo.source == source


def test_corrupt_or_empty_xlsx(tmp_path):
    from openpyxl import Workbook

    (tmp_path / "broken.xlsx").write_bytes(b"this is not a zip file")
    assert _load_error(tmp_path / "broken.xlsx").reason.startswith("not a valid .xlsx workbook")
    book = Workbook()
    book.active.append(["only", "a", "header"])
    book.save(tmp_path / "header.xlsx")
    assert _load_error(tmp_path / "header.xlsx").reason == "no data rows (every sheet empty or only a header)"


# --- jsonl -------------------------------------------------------------------------------------


def _records(path: Path, records: list[dict], extra_lines: tuple[str, ...] = ()) -> None:
    lines = [json.dumps(r, ensure_ascii=False) for r in records] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_jsonl_bench_layout_keeps_ids_and_titles(tmp_path):
    _records(
        tmp_path / "corpus.jsonl",
        [
            {"id": "hotpotdev-0", "title": "Moscow State University", "text": "MSU is in Moscow."},
            {"id": "DEV_0", "title": "战国无双3", "text": "《战国无双3》是光荣开发的游戏。", "lang": "zh"},
        ],
    )
    first, second = load(tmp_path / "corpus.jsonl")
    assert (first.id, first.title, first.text, first.format) == (
        "hotpotdev-0",
        "Moscow State University",
        "MSU is in Moscow.",
        "jsonl",
    )
    assert second.id == "DEV_0" and second.metadata == {"lang": "zh", "line": 2}


def test_jsonl_malformed_line_fails_the_whole_file_with_its_number(tmp_path):
    _records(tmp_path / "corpus.jsonl", [{"id": "a", "text": "fine"}], extra_lines=('{"id": "b", "text": ',))
    error = _load_error(tmp_path / "corpus.jsonl")
    assert error.reason.startswith("line 2: not valid JSON")
    _records(tmp_path / "notext.jsonl", [{"id": "a", "text": "fine"}, {"id": "b"}])
    assert _load_error(tmp_path / "notext.jsonl").reason == "line 2: field 'text' is missing or not a string"
    _records(tmp_path / "dup.jsonl", [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}])
    assert _load_error(tmp_path / "dup.jsonl").reason == "duplicate id 'a' on lines 1 and 2"


def _bench_corpus() -> Path | None:
    repo = Path(__file__).resolve().parents[1]
    for shared in (repo.parent / "shared", Path("/work/shared")):
        corpus = shared / "bench" / "hotpotqa_dev500" / "corpus.jsonl"
        if corpus.is_file():
            return corpus
    return None


def test_real_bench_corpus_loads_every_line():
    corpus = _bench_corpus()
    if corpus is None:
        pytest.skip("shared/bench/hotpotqa_dev500/corpus.jsonl is not beside this checkout")
    docs = load(corpus)
    lines = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert [d.id for d in docs] == [r["id"] for r in lines]
    assert docs[0].title == lines[0]["title"] and docs[0].text == lines[0]["text"]


# --- errors and discovery ----------------------------------------------------------------------


def test_unsupported_suffix_names_path_and_supported_types(tmp_path):
    (tmp_path / "image.xyz").write_bytes(b"\x00\x01")
    error = _load_error(tmp_path / "image.xyz")
    assert str(error) == f"{tmp_path / 'image.xyz'}: {error.reason}"
    assert error.reason.startswith("unsupported file type '.xyz' (supported: ")
    assert ".pdf" in error.reason and ".md" in SUPPORTED_SUFFIXES


def test_unreadable_paths(tmp_path):
    # A directory named like a file and a dangling symlink fail to open for every user, root
    # included (chmod 000 does not stop root: see test_permission_denied).
    (tmp_path / "folder.txt").mkdir()
    assert _load_error(tmp_path / "folder.txt").reason == "is a directory, not a file"
    (tmp_path / "dangling.txt").symlink_to(tmp_path / "missing.txt")
    assert _load_error(tmp_path / "dangling.txt").reason == "broken symbolic link"
    assert _load_error(tmp_path / "dangling.pdf").reason == "no such file"


def _reason_as_user(path: Path, uid: int) -> str:
    """load(path)'s LoadError reason, seen by another user (a forked child that drops root)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: no exec, so the already imported loaders run as `uid`
        reason = "loaded without error"
        try:
            os.setgid(uid)
            os.setuid(uid)
            load(path)
        except LoadError as e:
            reason = e.reason
        except BaseException as e:  # noqa: BLE001 - reported to the parent, never raised here
            reason = f"unexpected {type(e).__name__}: {e}"
        finally:
            os.write(write_end, reason.encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        reason = pipe.read()
    os.waitpid(pid, 0)
    return reason


def test_permission_denied():
    # tmp_path sits in a root-only directory; this test needs a file only its mode protects.
    folder = Path(tempfile.mkdtemp(prefix="kgrag-perm-"))
    try:
        folder.chmod(0o755)
        locked = folder / "locked.txt"
        locked.write_text("secret")
        locked.chmod(0)
        if os.geteuid() == 0:
            # Root reads files whatever their mode: check as the unprivileged user "nobody".
            assert _reason_as_user(locked, 65534) == "permission denied"
        else:
            assert _load_error(locked).reason == "permission denied"
    finally:
        shutil.rmtree(folder)


def test_discover_directories_globs_and_missing_paths(tmp_path):
    for name in [
        "docs/b.md",
        "docs/a.txt",
        "docs/sub/c.pdf",
        "docs/.hidden.md",
        "docs/.git/x.md",
        "docs/img.png",
        "docs/~$report.docx",  # Office's lock file beside an open document
    ]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / "notes.xyz").write_text("x")
    files, errors = discover(["docs", "docs/*.md", "notes.xyz", "missing", "docs/**/*.zzz"])
    assert [f.as_posix() for f in files] == ["docs/a.txt", "docs/b.md", "docs/sub/c.pdf", "notes.xyz"]
    assert [str(e) for e in errors] == [
        "missing: no such file or directory",
        "docs/**/*.zzz: no files match this pattern",
    ]
    files, errors = discover(["docs/**/*.pdf"])
    assert [f.as_posix() for f in files] == ["docs/sub/c.pdf"] and errors == []


def test_pdf_running_headers_and_footers_are_left_out(tmp_path):
    """A header and a numbered footer on every page are no content; a line recurring inside the
    pages' bodies stays."""
    pdf = canvas.Canvas(str(tmp_path / "policy.pdf"))
    for n, topic in enumerate(["Keys", "Roles", "Audit logs", "Backups"], start=1):
        pdf.drawString(72, 800, "ACME Corp - Confidential")
        for row, line in enumerate([f"{topic} are reviewed monthly.", "See the security handbook.",
                                    f"{topic} have an owner.", f"Questions about {topic.lower()} go to the CISO."]):
            pdf.drawString(72, 600 - 40 * row, line)
        pdf.drawString(72, 40, f"Page {n} of 4")
        pdf.showPage()
    pdf.save()
    [doc] = load(tmp_path / "policy.pdf")
    assert "Confidential" not in doc.text and "of 4" not in doc.text
    assert doc.text.count("See the security handbook.") == 4
    assert [page for _, page in doc.pages] == [1, 2, 3, 4]
    assert doc.text[doc.pages[2][0]:].startswith("Audit logs are reviewed monthly.")
