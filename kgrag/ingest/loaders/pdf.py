"""PDF as Markdown, page by page, from its layout (pdfplumber: each character's font size and
name, ruled tables):

- a line set larger than the body text, or wholly bold and short, is a heading: ``#`` levels by
  size (largest first), so the chunker gives chunks section paths ("Security Handbook /
  Visitors");
- a ruled table is a Markdown table (header row first), so every table reader works on it (row
  answers with named columns, headers kept across chunks, positional follow-ups); a table going
  on over a page break repeats its header on the next page, where its rows are cited;
- wrapped lines are joined into paragraphs (a blank line between paragraphs);
- running headers and footers every page repeats ("ACME Corp — Internal", "Page 3 of 20") are
  left out;
- the title is the metadata's, else the first largest heading, else the file name.

pypdfium2 opens the file first (damaged and encrypted PDFs get its clear reasons), and reads a
page's plain text layer where the layout reading fails.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgrag.ingest.loaders.base import LoadError, check_readable, normalize_newlines, paged_document
from kgrag.text.scripts import is_no_space_char
from kgrag.types import Document

log = logging.getLogger(__name__)

# A running header or footer: a line among the first or last EDGE_LINES of a page that recurs
# (digits aside: "Page 3 of 20") at the edges of at least RUNNING_SHARE of the pages, and of
# MIN_RUNNING_PAGES at least.
EDGE_LINES = 2
RUNNING_SHARE = 0.5
MIN_RUNNING_PAGES = 3
# A heading is set at least this much larger than the body text (most characters' size) ...
HEADING_SIZE_RATIO = 1.12
# ... or wholly bold, at least body size, and no longer than this.
BOLD_HEADING_MAX_CHARS = 80
MAX_HEADING_LEVELS = 6
# Lines further apart than this many line heights start a new paragraph.
PARAGRAPH_GAP = 0.8
# Metadata titles that name no document (reportlab's and some converters' defaults).
_PLACEHOLDER_TITLES = {"untitled", "untitled document", "anonymous", "(anonymous)", "(untitled)", "document"}
_BOLD = re.compile(r"bold|black|heavy|semibold|demi", re.I)
_DIGITS = re.compile(r"\d+")


def _running_key(line: str) -> str:
    return _DIGITS.sub("#", " ".join(line.split()).casefold())


def _edge_lines(lines: list[str]) -> set[int]:
    """Indices of a page's first and last ``EDGE_LINES`` lines holding text."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return set(filled[:EDGE_LINES] + filled[-EDGE_LINES:])


def running_lines(pages: list[list[str]]) -> set[str]:
    """The keys (``_running_key``) of the lines that recur at the edges of enough pages."""
    seen: Counter[str] = Counter()
    for lines in pages:
        seen.update({_running_key(lines[i]) for i in _edge_lines(lines)})
    least = max(MIN_RUNNING_PAGES, RUNNING_SHARE * len(pages))
    return {k for k, n in seen.items() if n >= least}


def without_running_lines(pages: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """(page number, text) pairs without their running headers and footers ("ACME Corp —
    Confidential", "Page 3 of 20"): repeated on every page they are no content, yet they sat in
    every chunk, matched every question naming the company and pushed real text out of the
    chunk. A page left empty is left out."""
    split = [(page_no, text.split("\n")) for page_no, text in pages]
    running = running_lines([lines for _, lines in split])
    if not running:
        return pages
    out = []
    for page_no, lines in split:
        edge = _edge_lines(lines)
        kept = "\n".join(line for i, line in enumerate(lines)
                         if not (i in edge and _running_key(line) in running)).strip()
        if kept:
            out.append((page_no, kept))
    return out


@dataclass
class _Line:
    text: str
    top: float
    bottom: float
    size: float  # the most common character size
    bold: bool  # every character in a bold face


@dataclass
class _Table:
    top: float
    rows: list[list[str]]


Block = _Line | _Table


def _cell(value: str | None) -> str:
    return " ".join((value or "").split()).replace("|", "\\|")


def _read_page(page: Any) -> list[Block]:
    """A page's lines (outside tables) and tables, top to bottom."""
    tables = page.find_tables()
    boxes = [t.bbox for t in tables]

    def outside(obj: dict) -> bool:
        x = (obj["x0"] + obj["x1"]) / 2
        y = (obj["top"] + obj["bottom"]) / 2
        return not any(x0 <= x <= x1 and top <= y <= bottom for x0, top, x1, bottom in boxes)

    blocks: list[Block] = []
    for table in tables:
        rows = [[_cell(c) for c in row] for row in table.extract()]
        rows = [r for r in rows if any(r)]
        if rows:
            blocks.append(_Table(table.bbox[1], rows))
    text_page = page.filter(outside) if boxes else page
    for line in text_page.extract_text_lines(return_chars=True, strip=True):
        chars = [c for c in line["chars"] if c["text"].strip()]
        if not chars or not line["text"].strip():
            continue
        size = Counter(round(float(c["size"]), 1) for c in chars).most_common(1)[0][0]
        bold = all(_BOLD.search(c.get("fontname", "")) for c in chars)
        blocks.append(_Line(line["text"].strip(), float(line["top"]), float(line["bottom"]), size, bold))
    blocks.sort(key=lambda b: b.top)
    return blocks


def _page_lines(blocks: list[Block]) -> list[str]:
    return [b.text for b in blocks if isinstance(b, _Line)]


class _Headings:
    """Which lines are headings and their levels, decided over the whole document: the body
    size is the size most characters have; heading styles are ranked largest first."""

    def __init__(self, pages: list[list[Block]]) -> None:
        sizes: Counter[float] = Counter()
        for blocks in pages:
            for b in blocks:
                if isinstance(b, _Line):
                    sizes[b.size] += len(b.text)
        self.body = sizes.most_common(1)[0][0] if sizes else 0.0
        styles = {self._style(b) for blocks in pages for b in blocks if isinstance(b, _Line) and self.is_heading(b)}
        ranked = sorted(styles, key=lambda s: (-s[0], not s[1]))
        self.levels = {style: min(i + 1, MAX_HEADING_LEVELS) for i, style in enumerate(ranked)}

    @staticmethod
    def _style(line: _Line) -> tuple[float, bool]:
        return (line.size, line.bold)

    def is_heading(self, line: _Line) -> bool:
        if not any(ch.isalpha() for ch in line.text):
            return False
        if line.size >= self.body * HEADING_SIZE_RATIO:
            return True
        return (line.bold and line.size >= self.body and len(line.text) <= BOLD_HEADING_MAX_CHARS
                and not line.text.endswith((".", ",", ";", ":", "。")))

    def level(self, line: _Line) -> int:
        return self.levels[self._style(line)]


def _joined(left: str, right: str) -> str:
    if left and right and is_no_space_char(left[-1]) and is_no_space_char(right[0]):
        return left + right
    return f"{left} {right}"


def _table_markdown(header: list[str], rows: list[list[str]]) -> str:
    width = len(header)

    def row(cells: list[str]) -> str:
        cells = (cells + [""] * width)[:width]
        return "| " + " | ".join(cells) + " |"

    return "\n".join([row(header), "| " + " | ".join(["---"] * width) + " |", *(row(r) for r in rows)])


def _markdown(pages: list[list[Block]], headings: _Headings) -> tuple[list[tuple[int, str]], str | None]:
    """Each page's Markdown, and the first top-level heading (a title)."""
    out: list[tuple[int, str]] = []
    title: str | None = None
    open_table: list[str] | None = None  # the header of a table that ended its page
    for page_no, blocks in enumerate(pages, start=1):
        text, open_table, first = _page_markdown(blocks, headings, open_table)
        title = title or first
        if text:
            out.append((page_no, text))
    return out, title


def _page_markdown(blocks: list[Block], headings: _Headings,
                   open_table: list[str] | None) -> tuple[str, list[str] | None, str | None]:
    """One page's Markdown; the header of a table ending the page (else None); the page's first
    top-level heading. ``open_table``: the header of the previous page's closing table."""
    parts: list[str] = []
    paragraph: list[_Line] = []
    first: str | None = None
    ends_in_table: list[str] | None = None
    for i, block in enumerate(blocks):
        if isinstance(block, _Line) and not headings.is_heading(block):
            if paragraph and block.top - paragraph[-1].bottom > PARAGRAPH_GAP * max(block.bottom - block.top, 1.0):
                parts.append(_paragraph(paragraph))
                paragraph = []
            paragraph.append(block)
            continue
        if paragraph:
            parts.append(_paragraph(paragraph))
            paragraph = []
        if isinstance(block, _Table):
            header, rows = block.rows[0], block.rows[1:]
            if i == 0 and open_table is not None and len(header) == len(open_table):
                # the previous page's table goes on: under its header, repeated here or not
                rows = rows if header == open_table else block.rows
                header = open_table
            parts.append(_table_markdown(header, rows))
            ends_in_table = header if i == len(blocks) - 1 else None
        else:
            level = headings.level(block)
            if first is None and level == 1:
                first = block.text
            parts.append(f"{'#' * level} {block.text}")
    if paragraph:
        parts.append(_paragraph(paragraph))
    return "\n\n".join(parts).strip(), ends_in_table, first


def _paragraph(lines: list[_Line]) -> str:
    text = lines[0].text
    for line in lines[1:]:
        text = _joined(text, line.text)
    return text


def _layout_pages(path: Path, count: int) -> list[list[Block]] | None:
    """Every page's blocks, running headers and footers left out; None when pdfplumber cannot
    read the file (the plain text layer is used instead)."""
    import pdfplumber

    try:
        with pdfplumber.open(str(path)) as pdf:
            pages = [_read_page(page) for page in pdf.pages[:count]]
    except Exception as e:  # noqa: BLE001 - pdfminer's many parse errors: pypdfium2's text stands
        log.warning("%s: layout not readable (%s: %s); using its plain text layer", path, type(e).__name__, e)
        return None
    running = running_lines([_page_lines(blocks) for blocks in pages])
    if running:
        for n, blocks in enumerate(pages):
            lines = [b for b in blocks if isinstance(b, _Line)]
            edge = {id(lines[i]) for i in _edge_lines([b.text for b in lines])
                    if _running_key(lines[i].text) in running}
            pages[n] = [b for b in blocks if id(b) not in edge]
    return pages


def _metadata_title(raw: str | None) -> str:
    title = " ".join((raw or "").split())
    return "" if title.casefold() in _PLACEHOLDER_TITLES else title


def load_pdf(path: Path, file_id: str | None = None) -> list[Document]:
    import pypdfium2 as pdfium

    check_readable(path)
    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as e:
        if "password" in str(e).lower():
            raise LoadError(path, "encrypted PDF (a password is needed to read it)") from None
        raise LoadError(path, f"not a valid PDF: {e}") from None
    try:
        plain: list[tuple[int, str]] = []
        for page_no in range(1, len(pdf) + 1):
            try:
                page = pdf[page_no - 1]
                textpage = page.get_textpage()
                page_text = normalize_newlines(textpage.get_text_bounded()).strip()
                textpage.close()
                page.close()
            except pdfium.PdfiumError as e:
                raise LoadError(path, f"damaged PDF: page {page_no} cannot be read ({e})") from None
            if page_text:  # an image-only page has nothing to cite on it
                plain.append((page_no, page_text))
        title = _metadata_title(pdf.get_metadata_dict().get("Title"))
        count = len(pdf)
    finally:
        pdf.close()
    if not plain:
        raise LoadError(path, "no text layer (scanned PDF?)")
    layout = _layout_pages(path, count)
    if layout is not None:
        pages, first_heading = _markdown(layout, _Headings(layout))
    else:
        pages, first_heading = without_running_lines(plain), None
    if not pages:
        raise LoadError(path, "no text layer (scanned PDF?)")
    return [paged_document(path, file_id, title or first_heading or path.stem, pages, "pdf")]
