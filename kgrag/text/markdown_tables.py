"""Markdown tables as both the term extractor (ingestion) and the graph walk (answering) read
them: a table line is ``| … |``; a separator line holds only ``---`` cells (``:`` for alignment);
the line right above a separator is the header, whose cells name columns, not things."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True)
class TableLine:
    """One line of a Markdown table: its span in the text, its cells (as written, stripped),
    and what it is — the ``header`` (right above a separator), the ``separator``, or a ``row``,
    which carries the cells of its table's header (empty for a table without one)."""

    start: int
    end: int
    kind: str  # "header" | "separator" | "row"
    cells: tuple[str, ...]
    header: tuple[str, ...] = ()
    table: int = 0  # which table of the text, in reading order


def table_lines(text: str) -> list[TableLine]:
    """Every table line of ``text``; consecutive table lines make one table."""
    out: list[TableLine] = []
    matches = list(TABLE_LINE.finditer(text))
    headers = header_indices(matches)
    header: tuple[str, ...] = ()
    table, previous_end = -1, -2
    for i, m in enumerate(matches):
        cells = tuple(c.strip() for c in m.group(1).split("|"))
        if previous_end < 0 or text.count("\n", previous_end, m.start()) != 1:  # not the next line
            table, header = table + 1, ()
        previous_end = m.end()
        if i in headers:
            header = cells
            out.append(TableLine(m.start(), m.end(), "header", cells, table=table))
        elif is_separator(list(cells)):
            out.append(TableLine(m.start(), m.end(), "separator", cells, table=table))
        else:
            out.append(TableLine(m.start(), m.end(), "row", cells, header, table))
    return out


def markdown_table(rows: list[list[str]], header: bool) -> str:
    """Rows of cells (a Word or HTML table's) as a Markdown table, so every reader of tables
    reads them: ``| a | b |`` lines, the first row a header above a ``| --- |`` separator when
    ``header`` (the source marked it so), none otherwise. A cell's line breaks become spaces and
    its own ``|`` a ``/`` (a pipe would split it); empty rows are left out."""
    lines = [[" ".join(cell.replace("|", "/").split()) for cell in row] for row in rows]
    lines = [cells for cells in lines if any(cells)]
    if not lines:
        return ""
    out = [f"| {' | '.join(cells)} |" for cells in lines]
    if header and len(out) > 1:
        out.insert(1, f"|{'|'.join(' --- ' for _ in lines[0])}|")
    return "\n".join(out)


# A GFM delimiter row, outer pipes optional ("--- | :---:", "| --- | ---").
_DELIMITER = re.compile(r"^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)+\|?[ \t]*$")


def with_outer_pipes(text: str, code: Sequence[tuple[int, int]] = ()) -> str:
    """``text`` with its GitHub-style tables written without outer pipes ("Member | Channel" over
    "--- | ---", or one of the two left out) given them, so every reader of ``TABLE_LINE``
    tables reads them too; a table is its delimiter row, the header line above it and the lines
    below holding a ``|``, up to a blank line. Lines starting inside ``code`` (character spans:
    the fenced blocks a Markdown parser found) are left as written."""
    if "|" not in text or "---" not in text:
        return text
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    fenced = {i for i, at in enumerate(starts) if any(s <= at < e for s, e in code)}
    for i, line in enumerate(lines):
        if i == 0 or {i, i - 1} & fenced or not _DELIMITER.match(line) or "|" not in lines[i - 1]:
            continue
        end = i + 1
        while end < len(lines) and "|" in lines[end] and lines[end].strip() and end not in fenced:
            end += 1
        for j in range(i - 1, end):
            lines[j] = _piped(lines[j])
    return "\n".join(lines)


def _piped(line: str) -> str:
    body = line.strip()
    return f"{'' if body.startswith('|') else '| '}{body}{'' if body.endswith('|') and len(body) > 1 else ' |'}"
