"""The README renders: every Markdown table has its header separator row, and no table row is
left dangling under another table's rows with a different column count."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
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


def test_readme_tables_have_separator_rows():
    tables = _tables(README.read_text(encoding="utf-8"))
    assert len(tables) >= 5  # the HTTP routes, evaluation, benchmark data, configuration, layout
    broken = [f"README.md:{start}: {rows[0]}" for start, rows in tables
              if len(rows) < 2 or not SEPARATOR.match(rows[1].replace(" ", ""))]
    assert not broken, "tables without a |---| row under the header: " + "; ".join(broken)


def test_readme_table_rows_match_their_header():
    tables = _tables(README.read_text(encoding="utf-8"))
    ragged = [f"README.md:{start + i}: {row}" for start, rows in tables for i, row in enumerate(rows)
              if _cells(row) != _cells(rows[0])]
    assert not ragged, "rows whose column count differs from their table's header: " + "; ".join(ragged)
