"""Markdown tables as both the term extractor (ingestion) and the graph walk (answering) read
them: a table line is ``| … |``; a separator line holds only ``---`` cells (``:`` for alignment);
the line right above a separator is the header, whose cells name columns, not things."""

from __future__ import annotations

import re

TABLE_LINE = re.compile(r"^[ \t]*\|(.*)\|[ \t]*$", re.MULTILINE)
SEPARATOR_CELL = re.compile(r"^\s*:?-{2,}:?\s*$")


def is_separator(cells: list[str]) -> bool:
    """Whether a table line's cells make a separator line: every non-empty cell ``---`` (a line
    of empty cells counts too, as the term extractor has always read it)."""
    return all(SEPARATOR_CELL.match(c) for c in cells if c.strip())


def header_indices(lines: list[re.Match[str]]) -> set[int]:
    """Indices, among consecutive ``TABLE_LINE`` matches, of the header lines: each right above
    a separator line."""
    return {i - 1 for i, m in enumerate(lines) if i > 0 and is_separator(m.group(1).split("|"))}


def header_cells(text: str) -> list[str]:
    """The cells of every header line of ``text``'s tables."""
    if "|" not in text:
        return []
    lines = list(TABLE_LINE.finditer(text))
    return [cell for i in sorted(header_indices(lines)) for cell in lines[i].group(1).split("|")]
