"""PDF through pypdfium2: the text layer page by page, with page start offsets, without the
running headers and footers every page repeats."""

from __future__ import annotations

import re
from pathlib import Path

from kgrag.ingest.loaders.base import LoadError, check_readable, normalize_newlines, paged_document
from kgrag.types import Document

# A running header or footer: a line among the first or last EDGE_LINES of a page that recurs
# (digits aside: "Page 3 of 20") at the edges of at least RUNNING_SHARE of the pages, and of
# MIN_RUNNING_PAGES at least.
EDGE_LINES = 2
RUNNING_SHARE = 0.5
MIN_RUNNING_PAGES = 3
_DIGITS = re.compile(r"\d+")


def without_running_lines(pages: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """(page number, text) pairs without their running headers and footers ("ACME Corp —
    Confidential", "Page 3 of 20"): repeated on every page they are no content, yet they sat in
    every chunk, matched every question naming the company and pushed real text out of the
    chunk. A page left empty is left out."""
    def key(line: str) -> str:
        return _DIGITS.sub("#", " ".join(line.split()).casefold())

    split = [(page_no, text.split("\n")) for page_no, text in pages]
    edges = [_edge_lines(lines) for _, lines in split]
    seen: dict[str, int] = {}
    for (_, lines), edge in zip(split, edges, strict=True):
        for k in {key(lines[i]) for i in edge}:
            seen[k] = seen.get(k, 0) + 1
    least = max(MIN_RUNNING_PAGES, RUNNING_SHARE * len(pages))
    running = {k for k, n in seen.items() if n >= least}
    if not running:
        return pages
    out = []
    for (page_no, lines), edge in zip(split, edges, strict=True):
        kept = "\n".join(line for i, line in enumerate(lines) if not (i in edge and key(line) in running)).strip()
        if kept:
            out.append((page_no, kept))
    return out


def _edge_lines(lines: list[str]) -> set[int]:
    """Indices of a page's first and last ``EDGE_LINES`` lines holding text."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return set(filled[:EDGE_LINES] + filled[-EDGE_LINES:])


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
        read: list[tuple[int, str]] = []
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
                read.append((page_no, page_text))
        title = (pdf.get_metadata_dict().get("Title") or "").strip() or path.stem
    finally:
        pdf.close()
    pages = without_running_lines(read)
    if not pages:
        raise LoadError(path, "no text layer (scanned PDF?)")
    return [paged_document(path, file_id, title, pages, "pdf")]
