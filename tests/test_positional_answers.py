"""A positional follow-up ("And the next one?", "the last one", "下一个呢？") is answered, without an
LLM, with the table row or list item next to the one the previous turn was about — through the
real retrieval pipeline, conversation completion and extractive answerer."""

from __future__ import annotations

import pytest

from kgrag.config import LLMSettings
from kgrag.generate.extractive.asked import PositionAsked
from kgrag.generate.extractive.list_neighbour import readable, source_items
from kgrag.generate.types import Source
from kgrag.retrieve.followup import complete
from kgrag.retrieve.types import Hit
from kgrag.types import Chunk, Turn

HANDBOOK = """# Company handbook

## Executives on Slack

To reach an executive, use their channel. When in doubt, use the general `#e-group` channel.

| Member | Channel |
| ------ | ------- |
| CEO    | `#ceo` |
| CFO    | `#finance` |
| CRO    | `#cro` |
| CMO    | `#cmo` |
| CISO   | `#ciso` |

## Organized by output

Every division has a clear priority, so that responsibilities don't overlap.

| Division | Output |
|----------|--------|
| Marketing | Generate Pipeline |
| Sales | Close Pipeline |
| Engineering | Execute development |

## Expense limits

- **Office supplies**: up to $50 per month, receipts required.
- **Mobile phone**: one plan per team member; family plans are not reimbursable.
- **Internet**: up to $80 per month.
"""

ZH = """# 报销指南

## 报销步骤

1. 在系统中填写报销单并上传发票。
2. 直属经理在三个工作日内审批。
3. 财务部复核后付款到工资卡。
"""


@pytest.fixture
def kb(components, tmp_path):
    (tmp_path / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
    (tmp_path / "zh.md").write_text(ZH, encoding="utf-8")
    report = components.ingest_job().run([tmp_path / "handbook.md", tmp_path / "zh.md"], progress=False)
    assert not report.failed and len(report.new) == 2
    return components


def _ask(kb, question: str, *history: Turn):
    result = kb.retriever.retrieve(question, history=list(history))
    return kb.generator.answer_to(question, result), result


@pytest.mark.parametrize(("previous", "followup", "expected"), [
    ("What is the Slack channel for the CRO?", "And for the next one?", "After “CRO”: Member: CMO; Channel: #cmo [1]."),
    ("What is the Slack channel for the CRO?", "And the one before that?", "Before “CRO”: Member: CFO; Channel: #finance [1]."),
    ("What is the Slack channel for the CFO?", "And the last one?", "The last one: Member: CISO; Channel: #ciso [1]."),
    ("What is the output for the Marketing division?", "And the next one?",
     "After “Marketing”: Division: Sales; Output: Close Pipeline [1]."),
])
def test_the_next_row_of_the_table_the_last_question_was_about(kb, previous, followup, expected):
    answer, result = _ask(kb, followup, Turn(previous))
    assert result.query.completion.positional
    assert answer.mode == "extractive" and answer.text == expected
    [citation] = answer.citations
    [(start, end)] = citation.highlights
    chunk = next(h.chunk for h in result.hits if h.chunk.id == citation.chunk_id)
    row = chunk.text[start:end]
    assert row.startswith("|") and readable(row.split("|")[1]) == expected.split(": ")[2].split(";")[0]


def test_the_previous_answer_decides_the_place_when_the_conversation_has_it(kb):
    """The server's conversations keep each answer: the item it quoted is the place, even when
    the question alone would match another ("the channel for the finance team" names no row)."""
    previous = Turn("Which channel reaches the finance team?", "After “CEO”: Member: CFO; Channel: #finance [1].")
    answer, _ = _ask(kb, "And the next one?", previous)
    assert answer.text == "After “CFO”: Member: CRO; Channel: #cro [1]."


def test_a_list_item_and_a_question_about_it(kb):
    previous = Turn("What is the limit for office supplies?")
    answer, _ = _ask(kb, "For the next item, are family plans covered?", previous)
    assert answer.text == ("After “Office supplies: up to $50 per month, receipts required.”: "
                           "Mobile phone: one plan per team member; family plans are not reimbursable [1].")
    # The follow-up asks about words the next item does not hold: the usual answer stands.
    answer, _ = _ask(kb, "For the next item, is a laptop covered?", previous)
    assert not answer.text.startswith("After")


def test_chinese_follow_up_gets_the_next_step(kb):
    answer, _ = _ask(kb, "下一步呢？", Turn("报销的第一步是什么？"))
    assert answer.text == "“在系统中填写报销单并上传发票。”之后：直属经理在三个工作日内审批 [1]。"


def test_no_item_clearly_asked_about_leaves_the_usual_answer(kb):
    answer, result = _ask(kb, "And the next one?", Turn("Why do divisions have priorities?"))
    assert result.query.completion.positional
    assert not answer.text.startswith(("After", "Before"))


def test_items_cut_by_the_source_window_are_not_quoted():
    """A long context is cut to a window around the matched chunk; a row the window cuts is no
    row to quote (here the window ends inside the CFO row, whose first cells still read as a
    row), and a block left with one item is no list."""
    full = ("| Member | Channel | Team |\n| --- | --- | --- |\n| CEO | `#ceo` | Office of the CEO |\n"
            "| CFO | `#finance` | Finance team |\n| CRO | `#cro` | Sales |")
    window = full[: full.index(" Finance team |")]
    assert window.endswith("| CFO | `#finance` |")
    context = Chunk(id="d#p0", doc_id="d", text=full, start=0, end=len(full))
    cut = Source(n=1, hits=[Hit(chunk=context, score=1.0)], text=window, offset=0)
    assert source_items(cut) == []
    whole = Source(n=1, hits=[Hit(chunk=context, score=1.0)], text=full, offset=0)
    assert [item.text for item in source_items(whole)] == [
        "Member: CEO; Channel: #ceo; Team: Office of the CEO", "Member: CFO; Channel: #finance; Team: Finance team",
        "Member: CRO; Channel: #cro; Team: Sales"]


def test_rows_of_a_context_opening_inside_a_table_are_named_by_the_header_the_chunker_kept():
    """A parent cut from its table's header (``Chunk.table_header_cells``) still names its rows'
    columns; a window further into it is not known to open inside that table."""
    from kgrag.types import TABLE_HEADER_KEY

    rows = "| CFO | `#finance` |\n| CRO | `#cro` |\n| CMO | `#cmo` |"
    context = Chunk(id="d#p1", doc_id="d", text=rows, start=100, end=100 + len(rows),
                    metadata={TABLE_HEADER_KEY: ["Member", "Channel"]})
    opened = Source(n=1, hits=[Hit(chunk=context, score=1.0)], text=rows, offset=100)
    assert [item.text for item in source_items(opened)] == [
        "Member: CFO; Channel: #finance", "Member: CRO; Channel: #cro", "Member: CMO; Channel: #cmo"]
    later = rows[rows.index("| CRO"):]
    window = Source(n=1, hits=[Hit(chunk=context, score=1.0)], text=later, offset=100 + rows.index("| CRO"))
    assert opened.opened_header == ("Member", "Channel") and window.opened_header == ()


def test_what_a_positional_follow_up_asks():
    def asked(question: str, previous: str = "What is the Slack channel for the CRO?"):
        return PositionAsked.of(complete(question, [Turn(previous, "#cro")], []))

    assert asked("And the next one?") == PositionAsked(
        "What is the Slack channel for the CRO?", "#cro", "after", frozenset())
    assert asked("What about the level above that?").where == "before"
    assert asked("And the last one?").where == "last"
    assert asked("那第一个呢？").where == "first"
    assert asked("For the next item, are family plans covered?").own_terms == {"famili", "plan", "cover"}  # stems
    assert asked("下一步呢？").own_terms == frozenset()  # "下一步" says where, not what
    assert asked("What about the other one?") is None  # no way given
    assert asked("What is the output for Sales?") is None  # not positional


def test_a_table_row_is_quoted_with_its_columns_named_and_a_header_never(kb):
    """A question naming a column and a row ("the output for the Sales division") is answered by
    that row read as "Division: Sales; Output: Close Pipeline" — not by the header line, whose
    words ("Division", "Output") matched the question best when lines were read as written."""
    answer, result = _ask(kb, "What is the output for the Sales division?")
    assert answer.text.startswith("Division: Sales; Output: Close Pipeline [1]"), answer.text
    assert "| Division | Output |" not in answer.text
    chunk = next(h.chunk for h in result.hits if h.chunk.id == answer.citations[0].chunk_id)
    [(start, end)] = answer.citations[0].highlights
    assert chunk.text[start:end] == "| Sales | Close Pipeline |"


def test_the_item_asked_for_may_lie_past_the_prompts_window():
    """The prompt reads a long context through a window around the matched chunk; the row after
    the one asked about is often just past it, and is read from the whole context."""
    from kgrag.generate.extractive.list_neighbour import answer_item

    full = ("| Member | Channel |\n| --- | --- |\n| CEO | `#ceo` |\n| CFO | `#finance` |\n"
            "| CRO | `#revenue-leadership-team` |\n"
            + "More about channels. " * 40)
    parent = Chunk(id="d#p0", doc_id="d", text=full, start=0, end=len(full), is_parent=True)
    child = Chunk(id="d#c0", doc_id="d", text=full[:full.index("| CRO")].rstrip(), start=0,
                  end=full.index("| CRO") - 1, parent_id="d#p0")
    window = Source(n=1, hits=[Hit(chunk=child, score=1.0, parent=parent)], text=child.text, offset=0)
    assert source_items(window) == []  # the CFO row touches the cut: left is one row, no list
    asked = PositionAsked("What is the Slack channel for the CFO?", "", "after")
    found = answer_item(asked, [window])
    assert found is not None and (found[0].name, found[1].name) == ("CFO", "CRO")
    from kgrag.generate.generator import Generator

    generator = Generator(LLMSettings())
    answer = generator._extractive(generator._asked("And the next one?", (), asked, None), [window])
    assert answer.text == "After “CFO”: Member: CRO; Channel: #revenue-leadership-team [1]."
    assert answer.unsupported_sentences == []  # checked against the row it read, past the window


@pytest.mark.parametrize(("gap", "joined"), [(1, True), (40, False)])
def test_a_table_cut_between_two_contexts_is_read_as_one_where_they_meet(gap, joined):
    """The row above a context's first row ends the context before it — when the two meet (a
    line break apart) and the later one opens inside a table; contexts apart are two tables."""
    from kgrag.generate.extractive.list_neighbour import answer_item
    from kgrag.types import TABLE_HEADER_KEY

    head = "| Member | Channel |\n| --- | --- |\n| CEO | `#ceo` |\n| CFO | `#finance` |"
    rest = "| CRO | `#cro` |\n| CMO | `#cmo` |"
    first = Chunk(id="d#p0", doc_id="d", text=head, start=0, end=len(head), is_parent=True)
    second = Chunk(id="d#p1", doc_id="d", text=rest, start=len(head) + gap, end=len(head) + gap + len(rest),
                   is_parent=True, metadata={TABLE_HEADER_KEY: ["Member", "Channel"]})
    sources = [Source(n=1, hits=[Hit(chunk=second, score=1.0)], text=rest, offset=second.start),
               Source(n=2, hits=[Hit(chunk=first, score=0.5)], text=head, offset=0)]
    before = answer_item(PositionAsked("What is the Slack channel for the CRO?", "", "before"), sources)
    after = answer_item(PositionAsked("What is the Slack channel for the CFO?", "", "after"), sources)
    if joined:
        assert before is not None and (before[1].name, before[1].source.n) == ("CFO", 2)
        assert after is not None and (after[1].name, after[1].source.n) == ("CRO", 1)
    else:
        assert before is None and after is None
