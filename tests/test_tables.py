"""The column a question asks for and the tables that have it (kgrag/retrieve/tables.py); the
walk's use of it is tested on the handbook fixture in tests/test_terms.py."""

from __future__ import annotations

import pytest

from kgrag.retrieve.tables import asked_column, has_column
from kgrag.text.markdown_tables import table_lines, with_outer_pipes


@pytest.mark.parametrize("question, column", [
    ("What is the Slack channel for the executive who leads the Marketing division?", "channel"),
    ("What is the name of the Slack channel for the executive who leads Marketing?", "channel"),
    ("What is the job title of the executive who oversees Sales Development?", "title"),
    ("Which Slack channel prefix is used for temporary project channels?", "prefix"),
    ("The 'ext-' prefix is for shared channels. What is the Slack channel for the CFO?", "channel"),
    ("What is the defined organizational output for the division that includes the web team?", "output"),
    # A name or a term is no column; a question with no asked-for noun has none.
    ("What is the term for a team member with above-average experience in a topic?", None),
    ("What is the name of the tool that draws flowcharts in Markdown?", "tool"),  # a "Tool" column would
    ("When did the current fiscal quarter begin?", None),
    ("And for the next one?", None),
])
def test_the_asked_for_noun_names_the_column(question, column):
    assert asked_column(question) == column


def test_a_column_is_found_in_a_table_header_only():
    text = ("To reach an executive, use their channel.\n\n| Member | Channels |\n| ------ | :-------: |\n"
            "| CFO | `#finance` |\n| Output | `#cmo` |\n")
    assert has_column(text, "channel") and has_column(text, "member")  # an inflection counts
    assert not has_column(text, "output")  # a body cell is no column
    assert not has_column("Ask in the channel named in the table.", "channel")  # prose has no header
    assert not has_column("| Member | Channel |\n| CFO | #finance |", "channel")  # no separator: no header


BARE = """# Channels

Member | Channel
--- | :---:
CFO | `#finance`
CLO | #legal

| Level | Scope
| --- | ---
| CEO | Company

```
x | y
--- | ---
```
"""


def test_tables_without_outer_pipes_get_them_and_code_keeps_its_own():
    from kgrag.ingest.chunking.markdown import outline

    piped = with_outer_pipes(BARE, outline(BARE).fences)
    assert piped.split("\n")[2:6] == ["| Member | Channel |", "| --- | :---: |", "| CFO | `#finance` |", "| CLO | #legal |"]
    assert "| Level | Scope |\n| --- | --- |\n| CEO | Company |" in piped
    assert "```\nx | y\n--- | ---\n```" in piped  # a fenced block is code
    assert with_outer_pipes(piped, outline(piped).fences) == piped
    assert "| x | y |" in with_outer_pipes(BARE)  # without the fences a parser found, it looks like a table
    rows = [line for line in table_lines(piped) if line.kind == "row"]
    assert [(r.cells[0], r.header) for r in rows] == [("CFO", ("Member", "Channel")), ("CLO", ("Member", "Channel")),
                                                    ("CEO", ("Level", "Scope"))]
