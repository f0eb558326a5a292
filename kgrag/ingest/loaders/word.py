"""Word .docx through python-docx, rewritten as light Markdown (headings, lists, table rows)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from kgrag.ingest.loaders.base import LoadError, check_readable, file_document
from kgrag.text.markdown_tables import markdown_table
from kgrag.types import Document

if TYPE_CHECKING:  # python-docx is imported when a .docx is loaded
    from docx.table import Table, _Row
    from docx.text.paragraph import Paragraph

# "Heading 2"; "标题 2" in documents whose styles carry Chinese names (WPS Office, a localised Word).
_HEADING_STYLE = re.compile(r"^(?:Heading|标题)\s*(\d)$", re.IGNORECASE)
BODY_OUTLINE_LEVEL = 9  # Word's outline level of body text; 0..8 are heading levels 1..9


def _paragraph_markdown(paragraph: Paragraph) -> tuple[str, int | None]:
    """The paragraph as Markdown, and its heading level (None for body text)."""
    text = paragraph.text.strip()
    style = paragraph.style.name if paragraph.style is not None else ""
    if style == "Title":
        return f"# {text}", 0
    level = _heading_level(paragraph, style)
    if level is not None:
        return f"{'#' * level} {text}", level
    if style.startswith("List"):
        return f"- {_bold_lead(paragraph, text)}", None
    return _bold_lead(paragraph, text), None


# A bold lead longer than this is emphasis, not a term being defined.
MAX_BOLD_TERM = 60


def _bold_lead(paragraph: Paragraph, text: str) -> str:
    """``text`` with the bold words it opens with marked ``**…**`` when more follows: a Word
    glossary's "**Tenant** – an isolated customer space", which the term extractor reads as a
    defined term; python-docx's text alone drops the bold."""
    lead = []
    for run in paragraph.runs:
        if not run.text.strip():
            lead.append(run.text)
            continue
        if not run.bold:
            break
        lead.append(run.text)
    term = "".join(lead).strip()
    if not term or len(term) > MAX_BOLD_TERM or not text.startswith(term) or not text[len(term):].strip():
        return text
    return f"**{term}**{text[len(term):]}"


def _heading_level(paragraph: Paragraph, style: str) -> int | None:
    """The paragraph's heading level (1..6), from its style's name ("Heading 2", "标题 2") or
    else from the outline level Word gives it or its style (a custom "Section Title" style
    set to outline level 2); None for body text."""
    match = _HEADING_STYLE.match(style)
    if match:
        return max(1, min(int(match.group(1)), 6))
    level = _outline_level(paragraph)
    return None if level is None else min(level + 1, 6)


def _outline_level(paragraph: Paragraph) -> int | None:
    """``w:outlineLvl`` of the paragraph, else of its style or the styles it is based on."""
    from docx.oxml.ns import qn

    elements = [paragraph._p.pPr]
    style = paragraph.style
    while style is not None and len(elements) < 20:
        elements.append(style.element.pPr)
        style = style.base_style
    for properties in elements:
        found = properties.find(qn("w:outlineLvl")) if properties is not None else None
        if found is not None:
            value = int(found.get(qn("w:val"), BODY_OUTLINE_LEVEL))
            return value if value < BODY_OUTLINE_LEVEL else None
    return None


def _table_rows(table: Table) -> str:
    """The table as a Markdown table (``markdown_table``); its first row is a header when Word
    marks it one (repeated on each page: ``w:tblHeader``) or writes every cell of it in bold."""
    rows: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        seen = set()
        for cell in row.cells:
            # A merged cell is returned once per grid column it spans: keep it once.
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            cells.append(cell.text)
        rows.append(cells)
    return markdown_table(rows, header=bool(table.rows) and _is_header(table.rows[0]))


def _is_header(row: _Row) -> bool:
    """Whether Word marks ``row`` as the table's header: repeated on each page, or every run of
    text in it bold (by the run or its style)."""
    from docx.oxml.ns import qn

    properties = row._tr.trPr
    if properties is not None and properties.find(qn("w:tblHeader")) is not None:
        return True
    runs = [run for cell in row.cells for paragraph in cell.paragraphs for run in paragraph.runs if run.text.strip()]
    return bool(runs) and all(run.bold or (run.style is not None and run.style.font.bold) for run in runs)


def load_docx(path: Path, file_id: str | None = None) -> list[Document]:
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table

    check_readable(path)
    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as e:
        raise LoadError(path, f"not a valid .docx file: {e or type(e).__name__}") from None
    blocks: list[str] = []
    first_heading = ""
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            block, level = _table_rows(item), None
        else:
            block, level = _paragraph_markdown(item)
            if level is not None and not first_heading:
                first_heading = item.text.strip()
        if block.strip("#- "):
            blocks.append(block)
    title = (document.core_properties.title or "").strip() or first_heading or path.stem
    return [file_document(path, file_id, title, "\n\n".join(blocks), "docx")]
