"""Sentences and content terms, shared by the extractive answerer and the citation checker.

Sentences end at 。！？ (no space needed) or at . ! ? followed by whitespace ("e.g. the" is
no end: a lower-case word follows). Unlike the chunker's atoms, semicolons do not end a
sentence here (a quoted answer should not stop at "(MSU;"), and a single line break inside a
paragraph is a soft wrap, not an end, while Markdown headings, list items, table rows and
fences stay lines of their own. Terms are the BM25 analysis terms (stemmed English,
jieba-segmented Chinese, stop words dropped), so overlap works in both languages.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kgrag.text.analyze import analyze
from kgrag.text.markdown_tables import TableLine
from kgrag.text.scripts import is_no_space_char

_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\n]*\)")
_MARKS = re.compile(r"\*\*|(?<!\w)\*|\*(?!\w)|`")  # underscores stay: "loc_" is a prefix
_MARKDOWN_LINE_PREFIX = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*)")
# Lines that start a block of their own: headings, list items, quotes, table rows, fences.
_BLOCK_LINE = re.compile(r"\s*(?:#{1,6}\s|[-*+]\s|\d+[.)]\s|>|\||```|~~~)")
# Lines after which a new block starts even without a blank line.
_CLOSED_LINE = re.compile(r"\s*(?:#{1,6}\s|\||```|~~~)")
# "M. V. Lomonosov", "U.S. Army", "Dr. Smith": a full stop after an initial or a title is no end.
_NOT_ABBREVIATION = r"(?<![\s(.]\w)(?<!^\w)" + "".join(
    rf"(?<!\b{title})" for title in ("Mr", "Mrs", "Ms", "Dr", "Prof", "St", "Jr", "Sr", "vs")
)
_MARKERS = r"(?:\s*\[\d+\])*"  # citation markers written after the full stop stay with it
_SENTENCE_END = re.compile(
    rf"[。！？]+[”’」』）》\"']*{_MARKERS}"
    rf"|[!?]+[\"'”’)\]]*{_MARKERS}(?=\s|$)"
    rf"|{_NOT_ABBREVIATION}\.+[\"'”’)\]]*{_MARKERS}(?=\s+(?![a-z])|\s*$)"
)
_WRAP = re.compile(r"[ \t]*\n\s*")
# FAQ markers, after optional emphasis ("**问：…？**", "Q: …?", "Question: …"): a question
# sentence of a FAQ says what is asked, the answer sentences after it say the answer.
_EMPHASIS = r"[\s*_>]*"
_ASKED = re.compile(rf"^{_EMPHASIS}(?:问|问题|Q|Question)\s*[:：]", re.I)
_ANSWERED = re.compile(rf"^{_EMPHASIS}(?:答|回答|A|Answer)\s*[:：]\s*", re.I)


# A line of code: a statement keyword opening it, a call standing alone, an assignment, a prompt.
_CODE_LINE = re.compile(
    r"^(?:def\s+\w+\s*\(|class\s+\w+\s*[(:{]|import\s+[\w.]+\s*;?$|from\s+[\w.]+\s+import\s|"
    r"(?:const|let|var)\s+\w+\s*=|function\s*\w*\s*\(|#include\s*[<\"])"
    r"|^[A-Za-z_$][\w.$]*\(.*\)\s*;?$"
    r"|^[A-Za-z_$][\w.$\[\]\"']*\s*(?:=|\+=|-=|:=)\s*\S[^。！？]*$"
    r"|^(?:\$|>>>)\s"
)
_FENCE_LINE = re.compile(r"^[ \t]*(?:```|~~~)", re.MULTILINE)


def is_code(text: str, start: int, sentence: str) -> bool:
    """Whether the sentence at ``start`` of ``text`` is code, not prose: inside a fenced block
    (an odd number of fence lines before it), or a line of code standing alone — a definition or
    import opening it ("def f(x):", "import requests"), a call ("assign_role(\"…\")"), an
    assignment ("timeout = 10"), a shell prompt."""
    if bisect.bisect_right(_fence_ends(text), start) % 2 == 1:
        return True
    return _CODE_LINE.match(sentence.strip()) is not None


@functools.lru_cache(maxsize=64)
def _fence_ends(text: str) -> list[int]:
    """Where each fence line of ``text`` ends: read once per source, not once per sentence."""
    return [m.end() for m in _FENCE_LINE.finditer(text)]


@dataclass(frozen=True)
class Sentence:
    start: int  # span in the text that was split (whitespace trimmed)
    end: int
    text: str  # the span with soft line wraps joined


def split_sentences(text: str) -> list[Sentence]:
    """Non-empty sentences of ``text`` with their offsets."""
    out: list[Sentence] = []
    for block_start, block_end in _blocks(text):
        position = block_start
        for m in _SENTENCE_END.finditer(text, block_start, block_end):
            _add(text, position, m.end(), out)
            position = m.end()
        _add(text, position, block_end, out)
    return out


def _blocks(text: str) -> Iterator[tuple[int, int]]:
    """Paragraph-like spans: split at blank lines and around Markdown block lines."""
    start = None
    previous_closed = False
    offset = 0
    for line in text.splitlines(keepends=True):
        line_start, offset = offset, offset + len(line)
        if not line.strip():
            if start is not None:
                yield start, line_start
            start, previous_closed = None, False
            continue
        if start is not None and (previous_closed or _BLOCK_LINE.match(line)):
            yield start, line_start
            start = None
        if start is None:
            start = line_start
        previous_closed = bool(_CLOSED_LINE.match(line))
    if start is not None:
        yield start, len(text)


def _add(text: str, start: int, end: int, out: list[Sentence]) -> None:
    raw = text[start:end]
    stripped = raw.strip()
    if not stripped:
        return
    first = start + len(raw) - len(raw.lstrip())
    out.append(Sentence(first, first + len(stripped), _WRAP.sub(_join, stripped)))


def _join(m: re.Match[str]) -> str:
    """A soft line wrap: nothing between two CJK characters, else one space."""
    text, start, end = m.string, m.start(), m.end()
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    return "" if is_no_space_char(before) and is_no_space_char(after) else " "


@dataclass(frozen=True)
class Quotable:
    """A sentence an answer may quote. ``asked``: the FAQ question it answers ("" when none)."""

    sentence: Sentence
    asked: str = ""


def faq_paired(text: str, sentences: list[Sentence]) -> list[Quotable]:
    """``sentences`` of ``text`` without FAQ question sentences ("**问：用户离职后应该怎么处理？**",
    "Q: …?"); each sentence after one, up to the next question or a blank line, carries it as
    ``asked``: the question's words say what the answer is about, but quoting the question
    would answer nothing."""
    out: list[Quotable] = []
    asked, previous_end = "", 0
    for s in sentences:
        if asked and "\n\n" in text[previous_end:s.start].replace("\r", ""):
            asked = ""
        previous_end = s.end
        if _ASKED.match(s.text):
            asked = s.text
            continue
        out.append(Quotable(s, asked))
    return out


def answer_text(sentence: str) -> str:
    """A FAQ answer sentence without its marker and emphasis ("** 答：先禁用账号…" → "先禁用账号…")."""
    m = _ANSWERED.match(sentence)
    return sentence[m.end():].strip() if m else sentence


def is_heading(sentence: str) -> bool:
    return sentence.lstrip().startswith("#")


def plain(sentence: str) -> str:
    """The sentence without a Markdown list/quote/heading prefix."""
    return _MARKDOWN_LINE_PREFIX.sub("", sentence, count=1).strip()


def readable(markdown: str) -> str:
    """Inline Markdown as read: a link as its text, no emphasis or code marks."""
    text = _LINK.sub(r"\1", markdown)
    return " ".join(_MARKS.sub("", text).split())


def readable_cells(line: TableLine, opened: Sequence[str] = ()) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A table line's cells and its header's cells as read (``readable``). ``opened``: the
    header of the table the text opens inside (``Source.opened_header``), for a row of the
    text's first table whose header line is not in the text."""
    header = line.header or (tuple(opened) if line.table == 0 else ())
    return tuple(readable(c) for c in line.cells), tuple(readable(h) for h in header)


def row_text(cells: Sequence[str], header: Sequence[str]) -> str:
    """A table row as a sentence, each cell named by its column ("Division: Sales; Output: Close
    Pipeline"): a question names the columns too ("the output for the Sales division")."""
    if len(header) == len(cells) and any(header):
        return "; ".join(f"{h}: {c}" if h else c for h, c in zip(header, cells) if c)
    return " | ".join(c for c in cells if c)


def terms(text: str) -> set[str]:
    """Content terms. Pure punctuation never gets here (analyze keeps word characters only)."""
    return set(analyze(text))


def shorten(text: str, limit: int = 300) -> str:
    """At most ``limit`` characters, cut at a space when there is one near the end."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", int(limit * 0.7), limit)
    return text[: cut if cut > 0 else limit - 1].rstrip() + "…"
