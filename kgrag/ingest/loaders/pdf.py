"""PDF through pypdfium2: the text layer page by page, with page start offsets."""

from __future__ import annotations

from pathlib import Path

from kgrag.ingest.loaders.base import LoadError, check_readable, file_document, normalize_newlines
from kgrag.types import Document

PAGE_SEPARATOR = "\n\n"


def load_pdf(path: Path) -> list[Document]:
    import pypdfium2 as pdfium

    check_readable(path)
    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as e:
        if "password" in str(e).lower():
            raise LoadError(path, "encrypted PDF (a password is needed to read it)") from None
        raise LoadError(path, f"not a valid PDF: {e}") from None
    try:
        parts: list[str] = []
        pages: list[tuple[int, int]] = []
        offset = 0
        for page_no in range(1, len(pdf) + 1):
            try:
                page = pdf[page_no - 1]
                textpage = page.get_textpage()
                page_text = normalize_newlines(textpage.get_text_bounded()).strip()
                textpage.close()
                page.close()
            except pdfium.PdfiumError as e:
                raise LoadError(path, f"damaged PDF: page {page_no} cannot be read ({e})") from None
            if not page_text:
                continue  # an image-only page: nothing to cite on it
            if parts:
                offset += len(PAGE_SEPARATOR)
            pages.append((offset, page_no))
            parts.append(page_text)
            offset += len(page_text)
        title = (pdf.get_metadata_dict().get("Title") or "").strip() or path.stem
    finally:
        pdf.close()
    if not parts:
        raise LoadError(path, "no text layer (scanned PDF?)")
    text = PAGE_SEPARATOR.join(parts)
    # Page starts change the chunks' page numbers, so they are part of the content hash.
    return [file_document(path, title, text, "pdf", pages=pages, hash_extra=(repr(pages),))]
