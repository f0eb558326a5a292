"""Tables through the real pipeline: a wide Markdown table cut into several chunks, whose row far
from the header is still found by its column's name and read with it (``Chunk.table_header``),
and the tables of Word files, bare Markdown, Excel workbooks and slide decks, read as Markdown
tables are."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgrag.types import Turn, child_chunk_id

from .conftest import extractive_answer, ingested_kb, pages_fixture

LEVELS = [("CEO", "Chief Executive Officer", "Global Organization", "Champions"),
          ("Executive", "Chief People Officer", "Division", "Champions"),
          ("VP/Fellow", "VP of Global Channels", "Department(s)", "Drives Change"),
          ("Senior Director", "Senior Director, Engineering", "Sub-department(s)", "Develops the strategy"),
          ("Director/Distinguished", "Director of Customer Operations", "Multiple teams", "Drives the plans"),
          ("Senior Manager/Principal", "Principal Engineer", "Across Sub-departments", "Fosters"),
          ("Manager/Staff", "Engineering Manager", "Across Teams", "Implements"),
          ("Senior", "Senior People Operations Specialist", "Cross functional work", "Models"),
          ("Intermediate", "Intermediate Backend Engineer", "Work within team", "Grows"),
          ("Associate", "Junior Data Analyst", "Own work", "Learns")]


def _row(cells: tuple[str, ...]) -> str:
    link = f"[{cells[1]}](/job-families/{cells[1].lower().replace(' ', '-').replace(',', '')}/)"
    return f"| {cells[0]:<26} | {link:<200} | {cells[2]:<28} | {cells[3]:<24} |"


TABLE = "\n".join(["## Layers", "",
                   f"| {'Level':<26} | {'Example(s)':<200} | {'Scope of impact':<28} | {'Expected Behaviors':<24} |",
                   f"|{'-' * 28}|{'-' * 202}|{'-' * 30}|{'-' * 26}|", *map(_row, LEVELS), "",
                   "GitLab has at most eight layers in the company structure."])
PAGES = {"structure.md": f"# Organizational Structure\n\n{TABLE}\n",
         "hiring.md": "# Hiring\n\nEvery hiring manager writes the scope of a new role before it is posted.\n"}
kb = pages_fixture(PAGES)


def test_a_row_far_from_its_header_is_found_and_read_by_its_column(kb):
    result = kb.retriever.retrieve("What is the scope of impact for a Manager/Staff level role?")
    top = result.hits[0].chunk
    assert "Manager/Staff" in top.text and "Scope of impact" not in top.text  # cut from its header
    assert top.table_header.startswith("| Level | Example(s) | Scope of impact")
    answer = extractive_answer(kb, "What is the scope of impact for a Manager/Staff level role?")
    assert not answer.abstained
    assert answer.text.startswith("Level: Manager/Staff; Example(s): Engineering Manager; Scope of impact: Across Teams")


def test_the_row_above_the_first_row_of_a_chunk_is_read_from_the_chunk_before(kb):
    """"What about the level above that?" after an answer citing the row a chunk opens with: the
    row above ends the chunk (and context) before it. Retrieval places that chunk next to the
    cited one (the table runs on across the cut), and the answer reads the two as one table."""
    question = "What is the scope of impact for a Manager/Staff level role?"
    first = kb.retriever.retrieve(question)
    answer = kb.generator.answer_to(question, first)
    cited = answer.citations[0].chunk_id
    chunk = kb.chunk_index.get([cited])[0]
    assert chunk.text.startswith("| Manager/Staff"), "the row opens its chunk: the row above is elsewhere"
    follow = "What about the level above that?"
    result = kb.retriever.retrieve(follow, history=[Turn(question, answer.text, tuple(c.chunk_id for c in answer.citations))])
    assert [h.chunk.id for h in result.hits[:2]] == [cited, child_chunk_id(chunk.doc_id, chunk.ordinal - 1)]
    above = kb.generator.answer_to(follow, result)
    assert above.text.startswith("Before “Manager/Staff”: Level: Senior Manager/Principal; "
                                 "Example(s): Principal Engineer; Scope of impact: Across Sub-departments"), above.text
    assert above.citations[0].chunk_id != cited


EXECUTIVES = [("Member", "Channel", "Assistant"), ("CFO", "#finance", "Dana"), ("CLO", "#legal", "Omar"),
              ("CISO", "#ciso", "Lena")]


def _word_table(folder: Path) -> Path:
    """A Word manual's table, its header row in bold."""
    import docx

    document = docx.Document()
    document.add_heading("Reaching the executives", level=1)
    document.add_paragraph("Each executive has a Slack channel of their own.")
    table = document.add_table(rows=len(EXECUTIVES), cols=3)
    for i, cells in enumerate(EXECUTIVES):
        for j, value in enumerate(cells):
            table.cell(i, j).paragraphs[0].add_run(value).bold = i == 0
    document.save(folder / "executives.docx")
    return folder / "executives.docx"


def _bare_markdown_table(folder: Path) -> Path:
    """GitHub's table without outer pipes: "Member | Channel" over "--- | ---"."""
    rows = [" | ".join(cells) for cells in EXECUTIVES]
    (folder / "executives.md").write_text("# Executives\n\nEach executive has a channel of their own.\n\n"
                                          + "\n".join([rows[0], "--- | --- | ---", *rows[1:]]) + "\n", encoding="utf-8")
    return folder / "executives.md"


def _html_table_in_markdown(folder: Path) -> Path:
    """A Markdown page embedding its table as raw HTML, as handbooks do for wide tables."""
    head, *rows = EXECUTIVES
    html = ("<table><thead><tr>" + "".join(f"<th>{c}</th>" for c in head) + "</tr></thead><tbody>"
            + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows) + "</tbody></table>")
    (folder / "executives.md").write_text(f"# Executives\n\nEach executive has a channel of their own.\n{html}\n",
                                          encoding="utf-8")
    return folder / "executives.md"


@pytest.mark.parametrize("write", [_word_table, _bare_markdown_table, _html_table_in_markdown])
def test_a_word_bare_or_html_markdown_table_row_is_answered_with_its_columns_named(tmp_path, embedder, recognizer,
                                                                                   write):
    """A Word table, a Markdown table without outer pipes or an HTML table inside Markdown is a
    Markdown table once loaded: the row a question asks about is read with its columns named,
    as a piped table's would be."""
    kb = ingested_kb(tmp_path / "kb", embedder, recognizer, [write(tmp_path)], 1)
    try:
        answer = extractive_answer(kb, "Who is the assistant of the CLO?")
        assert answer.text.startswith("Member: CLO; Channel: #legal; Assistant: Omar"), answer.text
    finally:
        kb.close()


def test_an_excel_row_is_a_record_the_pipeline_answers_from(tmp_path, embedder, recognizer):
    """A workbook's rows are ingested as records (``load_xlsx``) and a question about one is
    answered from it, cited to that row."""
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Executives"
    for row in [("Member", "Channel", "Assistant"), ("CFO", "#finance", "Dana"), ("CLO", "#legal", "Omar"),
                ("CISO", "#ciso", "Lena")]:
        sheet.append(row)
    book.save(tmp_path / "executives.xlsx")
    kb = ingested_kb(tmp_path / "kb", embedder, recognizer, [tmp_path / "executives.xlsx"], 3)
    try:
        answer = extractive_answer(kb, "Who is the assistant of the CLO?")
        assert "Omar" in answer.text and "Dana" not in answer.text, answer.text
        assert answer.citations[0].chunk_id.split("#c")[0].endswith("#Executives#row2")
    finally:
        kb.close()


def test_a_slide_deck_is_answered_from_its_slides_and_notes_citing_the_slide(tmp_path, embedder, recognizer):
    """A .pptx deck through the pipeline: a slide's table row read with its columns named and a
    speaker note quoted, each citation naming its slide as the page."""
    from .test_loaders import _deck

    _deck(tmp_path / "review.pptx")
    kb = ingested_kb(tmp_path / "kb", embedder, recognizer, [tmp_path / "review.pptx"], 1)
    try:
        row = extractive_answer(kb, "What is the channel of the CLO?")
        assert row.text.startswith("Member: CLO; Channel: #legal"), row.text
        assert row.citations[0].page == 3
        note = extractive_answer(kb, "Who signs off the access review?")
        assert "The CISO signs off the review" in note.text and note.citations[0].page == 1, note.text
    finally:
        kb.close()
