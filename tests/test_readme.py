"""README.md and the pages under docs/ render: every Markdown table has its header separator row,
and no table row is left dangling under another table's rows with a different column count.
(tests/test_docs.py checks their links, commands and generated parts.)"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
SEPARATOR = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+$")


def _tables(text: str) -> list[tuple[int, list[str]]]:
    """(first line number, rows) of each block of consecutive ``|`` lines outside code fences."""
    tables: list[tuple[int, list[str]]] = []
    fenced = False
    current: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("```"):
            fenced = not fenced
        is_row = not fenced and line.startswith("|")
        if is_row:
            if not current:
                start = number
            current.append(line.rstrip())
        elif current:
            tables.append((start, current))
            current = []
    if current:
        tables.append((start, current))
    return tables


def _cells(row: str) -> int:
    return len(re.split(r"(?<!\\)\|", row.strip("|")))


def _all_tables() -> list[tuple[str, int, list[str]]]:
    return [(str(page.relative_to(REPO)), start, rows) for page in PAGES
            for start, rows in _tables(page.read_text(encoding="utf-8"))]


def test_tables_have_separator_rows():
    tables = _all_tables()
    assert len(tables) >= 20  # the docs' reference tables: routes, settings, formats, limits, ...
    broken = [f"{page}:{start}: {rows[0]}" for page, start, rows in tables
              if len(rows) < 2 or not SEPARATOR.match(rows[1].replace(" ", ""))]
    assert not broken, "tables without a |---| row under the header: " + "; ".join(broken)


def test_table_rows_match_their_header():
    ragged = [f"{page}:{start + i}: {row}" for page, start, rows in _all_tables() for i, row in enumerate(rows)
              if _cells(row) != _cells(rows[0])]
    assert not ragged, "rows whose column count differs from their table's header: " + "; ".join(ragged)
