"""Documents → parent and child chunks with section paths, pages and exact offsets.

Layout of the result, in document order:
- a document (or a parent span) that fits in one child is ONE stand-alone chunk
  (``parent_id None``, ``is_parent False``): no parent that would only repeat its child;
- otherwise a parent (``is_parent True``, id ``{doc.id}#p{j}``, ordinal j) followed by its
  children (id ``{doc.id}#c{i}``, ordinal i, ``parent_id`` set), each inside the parent's span.
Children and stand-alone chunks share one numbering i; parents have their own j.

Offsets: ``doc.text[chunk.start:chunk.end] == chunk.text`` always (leading and trailing
whitespace is left out of the span, not just out of the text).

Fenced code blocks are never cut: one longer than a child becomes its own oversize chunk,
so no chunk ever holds half a fence.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from typing import Any

from kgrag.config import ChunkingSettings
from kgrag.ingest.chunking.atoms import Atom, glue_headings, refine, region_atoms
from kgrag.ingest.chunking.packing import pack
from kgrag.ingest.chunking.structure import Region, Structure, document_structure
from kgrag.text.markdown_tables import TableLine, table_lines
from kgrag.types import PAGES_KEY, SECTIONS_KEY, TABLE_HEADER_KEY, Chunk, Document, child_chunk_id

_NON_SPACE = re.compile(r"\S")


class Chunker:
    """Splits Documents into Chunks; one instance serves any number of documents.

    ``count`` measures text in the configured unit: None means characters (``len``); with
    ``unit = "tokens"`` pass the embedder's token counter. Atoms (sentences, lines) are counted
    once and summed, so with a token counter sizes are held to within tokenizer edge effects.
    """

    def __init__(self, settings: ChunkingSettings, count: Callable[[str], int] | None = None) -> None:
        if settings.unit == "tokens" and count is None:
            raise ValueError("chunking.unit is 'tokens' but no token counter was given to the Chunker")
        self.settings = settings
        self.count: Callable[[str], int] = count or len

    def chunk(self, doc: Document) -> list[Chunk]:
        text = doc.text
        if not text.strip():
            return []
        structure = document_structure(text, doc.format, doc.metadata.get("language"))
        builder = _ChunkBuilder(doc, structure)
        if self.count(text) <= self.settings.child_size:
            builder.add(0, len(text))
            return builder.chunks

        child_size = self.settings.child_size
        atoms: list[Atom] = []
        for region in structure.regions:
            atoms.extend(region_atoms(text, region, doc.format))
        atoms = [
            piece for atom in glue_headings(atoms) for piece in refine(text, atom, child_size, self.count)
        ]
        for atom in atoms:
            atom.size = self.count(text[atom.start : atom.end])

        parents = pack(
            text, atoms, 0, len(atoms), self.settings.parent_size, self.count, forced=structure.forced_break
        )
        for parent in parents:
            if sum(a.size for a in atoms[parent.first : parent.last]) <= child_size:
                builder.add(parent.start, parent.end)
                continue
            children = pack(
                text,
                atoms,
                parent.first,
                parent.last,
                child_size,
                self.count,
                overlap=self.settings.child_overlap,
            )
            if len(children) == 1:  # one oversize fence: a parent would only repeat it
                builder.add(parent.start, parent.end)
                continue
            parent_id = builder.add(parent.start, parent.end, is_parent=True)
            for child in children:
                builder.add(child.start, child.end, parent_id=parent_id)
        return builder.chunks


class _ChunkBuilder:
    """Turns spans into Chunks: trims whitespace, numbers ids, finds section path and page."""

    def __init__(self, doc: Document, structure: Structure) -> None:
        self.doc = doc
        self.chunks: list[Chunk] = []
        self._children = 0
        self._parents = 0
        self._regions = structure.regions
        self._region_starts = [r.start for r in structure.regions]
        self._page_starts = [start for start, _ in doc.pages]
        self._path_separator = "." if doc.format == "code" else " / "
        self._table_lines: list[TableLine] = table_lines(doc.text) if "|" in doc.text else []
        self._table_starts = [line.start for line in self._table_lines]

    def add(self, start: int, end: int, *, is_parent: bool = False, parent_id: str | None = None) -> str:
        text = self.doc.text
        first = _NON_SPACE.search(text, start, end)
        start = first.start() if first else start
        end = start + len(text[start:end].rstrip())
        if is_parent:
            chunk_id, ordinal = f"{self.doc.id}#p{self._parents}", self._parents
            self._parents += 1
        else:
            chunk_id, ordinal = child_chunk_id(self.doc.id, self._children), self._children
            self._children += 1
        self.chunks.append(
            Chunk(
                id=chunk_id,
                doc_id=self.doc.id,
                text=text[start:end],
                source=self.doc.source,
                title=self.doc.title,
                section_path=self._section_path(start, end),
                page=self._page(start),
                start=start,
                end=end,
                ordinal=ordinal,
                parent_id=parent_id,
                is_parent=is_parent,
                metadata=self._section_starts(start, end) | self._page_starts_in(start, end) | self._table_header(start),
            )
        )
        return chunk_id

    def _covered(self, start: int, end: int) -> list[Region]:
        lo = max(bisect_right(self._region_starts, start) - 1, 0)
        hi = bisect_right(self._region_starts, max(start, end - 1))
        return self._regions[lo:hi]

    def _section_starts(self, start: int, end: int) -> dict[str, list[list[Any]]]:
        """``{SECTIONS_KEY: [[offset in the chunk, path], ...]}`` when the span holds more than one
        section (``Chunk.section_at``); else nothing. A heading is in the section it opens."""
        starts: list[list[Any]] = []
        for region in self._covered(start, end):
            path = self._path_separator.join(region.path)
            if not starts or starts[-1][1] != path:
                starts.append([max(region.start - start, 0), path])
        return {SECTIONS_KEY: starts} if len(starts) > 1 else {}

    def _section_path(self, start: int, end: int) -> str:
        """The deepest section holding all of the span's text (Markdown: trail joined by " / ").

        For code, a span over several top-level definitions lists their names instead.
        """
        covered = self._covered(start, end)
        # A heading glued to the section below it (a heading-only section such as a document
        # title) does not pull the path up: the path names the sections whose text is here.
        bodies = [r for r in covered if r.kind != "heading"]
        paths = [r.path for r in (bodies or covered) if r.path]
        if not paths:
            return ""
        common = paths[0]
        for path in paths[1:]:
            n = 0
            while n < min(len(common), len(path)) and common[n] == path[n]:
                n += 1
            common = common[:n]
        if not common and self.doc.format == "code":
            return ", ".join(dict.fromkeys(path[0] for path in paths))
        return self._path_separator.join(common)

    def _table_header(self, start: int) -> dict[str, list[str]]:
        """``{TABLE_HEADER_KEY: cells}`` when the span opens on a row of a Markdown table below
        its header line (or inside such a row); else nothing."""
        index = bisect_right(self._table_starts, start) - 1
        if index < 0:
            return {}
        line = self._table_lines[index]
        if line.kind != "row" or not line.header or start >= line.end:
            return {}
        return {TABLE_HEADER_KEY: list(line.header)}

    def _page_starts_in(self, start: int, end: int) -> dict[str, list[list[int]]]:
        """``{PAGES_KEY: [[offset in the chunk, page], ...]}`` when the span runs over a page break."""
        if not self._page_starts:
            return {}
        first = max(bisect_right(self._page_starts, start) - 1, 0)
        last = bisect_right(self._page_starts, max(start, end - 1))
        pages = self.doc.pages[first:last]
        if len(pages) < 2:
            return {}
        return {PAGES_KEY: [[max(at - start, 0), page] for at, page in pages]}

    def _page(self, start: int) -> int | None:
        if not self._page_starts:
            return None
        index = max(bisect_right(self._page_starts, start) - 1, 0)
        return self.doc.pages[index][1]
