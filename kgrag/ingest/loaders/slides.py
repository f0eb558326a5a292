"""PowerPoint .pptx through python-pptx, rewritten as light Markdown: a section per slide.

Each slide is a ``## <its title>`` section ("Slide <n>" without one) holding its text boxes'
paragraphs (indented bullets as list items), its tables as Markdown tables (the first row a
header when the table is formatted so) and its speaker notes, which often say what the slide
only hints at. Slide numbers are kept as page numbers, so a citation names the slide.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kgrag.ingest.loaders.base import LoadError, check_readable, paged_document
from kgrag.text.markdown_tables import markdown_table
from kgrag.types import Document

if TYPE_CHECKING:  # python-pptx is imported when a .pptx is loaded
    from pptx.shapes.base import BaseShape
    from pptx.slide import Slide


def load_pptx(path: Path, file_id: str | None = None) -> list[Document]:
    from pptx import Presentation
    from pptx.exc import PackageNotFoundError

    check_readable(path)
    try:
        deck = Presentation(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as e:
        raise LoadError(path, f"not a valid .pptx file: {e or type(e).__name__}") from None
    slides: list[tuple[int, str]] = []
    first_title = ""
    for number, slide in enumerate(deck.slides, start=1):
        title = _title(slide)
        body = "\n\n".join(block for block in _blocks(slide) if block.strip())
        if not body and not title:
            continue  # a picture-only slide: nothing to cite on it
        first_title = first_title or title
        slides.append((number, f"## {title or f'Slide {number}'}" + (f"\n\n{body}" if body else "")))
    if not slides:
        raise LoadError(path, "no text on any slide")
    title = (deck.core_properties.title or "").strip() or first_title or path.stem
    return [paged_document(path, file_id, title, slides, "pptx")]


def _title(slide: Slide) -> str:
    shape = slide.shapes.title
    return " ".join(shape.text_frame.text.split()) if shape is not None and shape.has_text_frame else ""


def _blocks(slide: Slide) -> Iterator[str]:
    title = slide.shapes.title
    for shape in _shapes(slide.shapes):
        if title is not None and shape.shape_id == title.shape_id:
            continue
        if shape.has_text_frame:
            yield "\n".join(_paragraphs(shape))
        elif getattr(shape, "has_table", False):
            table = shape.table  # type: ignore[attr-defined]
            rows = [[cell.text for cell in row.cells] for row in table.rows]
            yield markdown_table(rows, header=bool(table.first_row))
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        if notes is not None and notes.text.strip():
            yield f"Notes: {' '.join(notes.text.split())}"


def _shapes(shapes: Iterable[BaseShape]) -> Iterator[BaseShape]:
    """Every shape, those inside groups too, in the slide's order."""
    for shape in shapes:
        if getattr(shape, "shapes", None) is not None:  # a group
            yield from _shapes(shape.shapes)  # type: ignore[attr-defined]
        else:
            yield shape


def _paragraphs(shape: BaseShape) -> Iterator[str]:
    """A text box's paragraphs: an indented one (a bullet's sub-point) as a list item."""
    for paragraph in shape.text_frame.paragraphs:  # type: ignore[attr-defined]
        text = " ".join(paragraph.text.split())
        if text:
            yield f"{'  ' * (paragraph.level - 1)}- {text}" if paragraph.level > 0 else text
