"""The extractive answer to a positional follow-up ("And the next one?", "the level above that",
"最后一个呢？"): the table row or list item next to the one the last turn was about.

The follow-up's own words say nothing about the answer, so quoting the sentences that best cover
them quotes the previous answer's neighbourhood at best ("In many ways, we are organized by
output" for "And the next one?" after "What is the output for the Marketing division?"). What
the user means is a place in a list: the item the previous turn asked about (the one the
previous question names, rarer words weighing more, in the sources' rank order; else the one the
previous answer quoted)
and the item after or before it in the same table or list — or that list's first or last item. The
retrieval path already puts the cited chunk first (``kgrag.retrieve.cited_neighbour``); this reads the
place inside it. No table or list, no item matched, or no item that way: the section retrieval
placed next to the cited chunk is read for the previous question instead ("Which prefix do working
group channels carry?" → "And the next one?" → "Feature channels carry the prefix feat_"); with no
such section either, the usual extractive answer stands.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from kgrag.generate.extractive.answerer import Extracted
from kgrag.generate.extractive.asked import Asked, PositionAsked
from kgrag.generate.extractive.best_sentences import choose
from kgrag.generate.extractive.best_sentences import compose as compose_quotes
from kgrag.generate.extractive.subjects import pick
from kgrag.generate.tuning import EXTRACTIVE
from kgrag.generate.types import Source
from kgrag.retrieve.cited_neighbour import NEIGHBOUR
from kgrag.text.markdown_tables import table_lines
from kgrag.text.scripts import has_han
from kgrag.text.sentences import Sentence, readable, readable_cells, row_text, shorten, terms

_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,3}[.)]|[（(]?[一二三四五六七八九十]{1,3}[)）、.])[ \t]+(?P<body>\S.*)$")


@dataclass(frozen=True)
class Item:
    """A table row or list item of a source: its line's span in ``source.text``, its cells (a list
    item: one) in readable text, and the header's cells above them (a list item: none)."""

    source: Source
    block: int  # which table or list of the source (items of one block are consecutive)
    start: int
    end: int
    cells: tuple[str, ...]
    header: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """How the answer names it: its first cell."""
        return self.cells[0]

    @property
    def text(self) -> str:
        """What the answer quotes, and what it is matched by (``row_text``)."""
        return row_text(self.cells, self.header)

    @cached_property
    def words(self) -> set[str]:
        """The terms of ``text`` (analysed once: every item is matched against several words)."""
        return terms(self.text)

    @cached_property
    def own_words(self) -> set[str]:
        """The terms of its cells alone, without the column names."""
        return terms(" ".join(self.cells))


def answer_item(asked: PositionAsked, sources: Sequence[Source]) -> tuple[Item, Item] | None:
    """(the item the previous turn was about, the item asked for), or None: no item is clearly
    the previous turn's (``_asked_about``, ``_quoted``), none lies that way, or the follow-up
    asks about words the item asked for does not hold."""
    items = [item for source in sources for item in source_items(source.whole())]
    anchor = _asked_about(asked.previous_question, items) or _quoted(asked.previous_answer, items)
    if anchor is None:
        return None
    block = _table_run(anchor, items)
    at = block.index(anchor)
    index = {"after": at + 1, "before": at - 1, "first": 0, "last": len(block) - 1}[asked.where]
    if not 0 <= index < len(block) or index == at:
        return None
    target = block[index]
    if asked.own_terms and not asked.own_terms & target.words:
        return None
    return anchor, target


def _table_run(anchor: Item, items: list[Item]) -> list[Item]:
    """The items of ``anchor``'s block, joined with the blocks it goes on in: a table the chunker
    cut between two contexts of one document is one table (the row above a context's first row
    ends the context before it: "the level above that" after the row a parent opens with)."""
    blocks: dict[tuple[int, int], list[Item]] = {}
    for item in items:
        blocks.setdefault((id(item.source), item.block), []).append(item)
    run = blocks.pop((id(anchor.source), anchor.block))
    while (before := next((k for k, b in blocks.items() if _goes_on(b, run)), None)) is not None:
        run = blocks.pop(before) + run
    while (after := next((k for k, b in blocks.items() if _goes_on(run, b)), None)) is not None:
        run = run + blocks.pop(after)
    return run


def _goes_on(first: list[Item], then: list[Item]) -> bool:
    """Whether ``then`` is ``first``'s table going on in the next context of the same document:
    ``first`` ends its source's text, ``then`` opens its own inside a table (``opened_header``),
    and the two texts meet (a line break apart)."""
    a, b = first[-1].source, then[0].source
    if a is b or a.context.doc_id != b.context.doc_id or not b.opened_header:
        return False
    meet = b.offset - (a.offset + len(a.text))
    return 0 <= meet <= 2 and not a.text[first[-1].end:].strip() and not b.text[: then[0].start].strip()


def _asked_about(question: str, items: list[Item]) -> Item | None:
    """The item the previous question names: the one holding the most of its word weight (inverse
    item frequency, discounted by source rank), if that is at least ``EXTRACTIVE.list_min_coverage`` of the
    question's weight with one of the words in the item's own cells (not only its column names,
    which every row of the table has)."""
    wanted = terms(question)
    weights = _weights(wanted, items)
    total = math.fsum(weights.values())
    best, best_score = None, 0.0
    for item in items:
        score = math.fsum(weights[t] for t in item.words & wanted)
        if score < EXTRACTIVE.list_min_coverage * total or not item.own_words & wanted:
            continue
        score /= 1 + EXTRACTIVE.rank_discount * (item.source.n - 1)
        if score > best_score:
            best, best_score = item, score
    return best


def _quoted(answer: str, items: list[Item]) -> Item | None:
    """The item the previous answer quoted (every cell of it is in the answer), the one quoted
    first; None when it quoted none (an LLM's paraphrase, a prose answer)."""
    said = _folded(answer)
    found = []
    for item in items:
        places = [said.find(_folded(cell)) for cell in item.cells if cell]
        if said and places and min(places) >= 0:
            found.append((min(places), item))
    return min(found, key=lambda pair: pair[0])[1] if found else None


def _folded(text: str) -> str:
    return " ".join(readable(text).casefold().split())


def neighbour_section(asked: PositionAsked, sources: Sequence[Source]) -> Source | None:
    """The chunk retrieval placed as the cited chunk's neighbour (the first chunk of the next or
    previous section: ``placed_by`` the position rule), as a source of its own text, numbered as
    the source it belongs to; None when retrieval placed none, or the follow-up asks about words
    it does not hold."""
    for source in sources:
        for hit in source.hits:
            if hit.placed_by.get("rule") != NEIGHBOUR:
                continue
            if asked.own_terms and not asked.own_terms & terms(hit.chunk.text):
                return None
            return Source(n=source.n, hits=[hit], text=hit.chunk.text, offset=hit.chunk.start)
    return None


def section_title(section: Source) -> str:
    """The neighbouring section's own heading ("Location Channels (loc_)"), which the quoted
    sentences may not repeat: the answer names the section it is about; "" without one."""
    first = section.text.lstrip().split("\n", 1)[0]
    if not first.startswith("#"):
        return ""
    return readable(first.lstrip("#"))


def compose(asked: PositionAsked, anchor: Item, target: Item, question: str) -> str:
    """The answer text: the item quoted and cited, saying where it lies ("After “Marketing”: …")."""
    name = shorten(anchor.name, EXTRACTIVE.list_anchor_chars)
    chinese = has_han(question)
    lead = {
        "after": f"“{name}”之后：" if chinese else f"After “{name}”: ",
        "before": f"“{name}”之前：" if chinese else f"Before “{name}”: ",
        "first": "第一项：" if chinese else "The first one: ",
        "last": "最后一项：" if chinese else "The last one: ",
    }[asked.where]
    body = target.text.rstrip("。.;； ")
    return f"{lead}{body} [{target.source.n}]{'。' if chinese else '.'}"


def quoted_sentence(item: Item) -> Sentence:
    """The item's line as a sentence of its source (what the citation points at)."""
    return Sentence(item.start, item.end, item.source.text[item.start : item.end])


def source_items(source: Source) -> list[Item]:
    """The rows of the source's tables (header and separator lines left out) and the items of
    its lists, each block numbered in reading order; a block of one item is no list."""
    rows = {line.start: line for line in table_lines(source.text)}
    items: list[Item] = []
    block, kind = -1, ""
    for start, end, line in _lines(source.text):
        row = rows.get(start)
        listed = None if row else _LIST_ITEM.match(line)
        if row:
            if kind != f"table {row.table}":
                block, kind = block + 1, f"table {row.table}"
            cells, header = readable_cells(row, source.opened_header)
            if row.kind == "row" and any(cells):
                items.append(Item(source, block, start, end, cells, header))
        elif listed:
            if kind != "list":
                block, kind = block + 1, "list"
            if body := readable(listed.group("body")):
                items.append(Item(source, block, start, end, (body,)))
        elif line.strip() or kind.startswith("table"):
            kind = ""  # prose ends a table or a list; a blank line ends a table only
    items = [item for item in items if not _cut(item)]
    counts: dict[int, int] = {}
    for item in items:
        counts[item.block] = counts.get(item.block, 0) + 1
    return [item for item in items if counts[item.block] > 1]


def _cut(item: Item) -> bool:
    """Whether the item's line runs past the source's window onto its context (a long context
    is cut to a window around the matched chunk: the line there is not whole)."""
    source, context = item.source, item.source.context
    text_end = source.offset + len(source.text)
    opens_cut = item.start == 0 and source.offset > context.start
    ends_cut = item.end >= len(source.text.rstrip()) and text_end < context.end
    return opens_cut or ends_cut


def _lines(text: str) -> list[tuple[int, int, str]]:
    out, position = [], 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        out.append((position, position + len(body), body))
        position += len(line)
    return out


def _weights(wanted: set[str], items: list[Item]) -> dict[str, float]:
    """Each wanted word's inverse item frequency: a word few items hold tells them apart (one no
    item holds weighs most: the items lack what the turn was about)."""
    held: dict[str, int] = dict.fromkeys(wanted, 0)
    for item in items:
        for t in item.words & wanted:
            held[t] += 1
    return {t: math.log(1 + len(items) / max(n, 1)) for t, n in held.items()}


class ListNeighbour:
    """A positional follow-up ("And the next one?"): the row or list item asked for, quoted with
    its row; else the section retrieval placed next to the cited one, read for what the last
    turn asked. Passes for any other question, or when neither is there."""

    name = "list_neighbour"

    def answer(self, asked: Asked, sources: Sequence[Source]) -> Extracted | None:
        position = asked.position
        if position is None:
            return None
        if (found := answer_item(position, sources)) is not None:
            anchor, target = found
            return Extracted(compose(position, anchor, target, asked.question),
                             [pick(target.source, quoted_sentence(target))])
        section = neighbour_section(position, sources)
        if section is None or not (picks := choose(asked.about(position.about), [section])):
            return None
        title = section_title(section)
        text = compose_quotes(picks)
        return Extracted(f"{title}: {text}" if title and title not in text else text, picks)
