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
from kgrag.text.scripts import has_han, is_mainly_non_latin, is_no_space_char

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
# A plain-text heading (``_plain_heading``): at most this many words, or Chinese characters.
MAX_HEADING_WORDS = 10
MAX_HEADING_HAN = 20
_NOT_HEADING_END = frozenset(".!?。！？;；:：,，、")
_SENTENCE_CLOSERS = frozenset(".!?。！？:：\"'”’)）")  # a line ending so ends its sentence
_WORD_END = re.compile(r"[。！？；，、]")
_FUNCTION_WORDS = frozenset("a an the of and or to in on at by for with from as is are was were be that which "
                            "who if but not".split())
_NUMBERED_HEADING = re.compile(
    r"^(?:(?:\d+(?:\.\d+)*\.?|[IVX]+\.|[A-Z]\.)\s+|第[一二三四五六七八九十百\d]+[章节条部分篇]\s*|[一二三四五六七八九十]+[、.．]\s*)\S")
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
    if in_fenced_block(text, start):
        return True
    return _CODE_LINE.match(sentence.strip()) is not None


def in_fenced_block(text: str, at: int) -> bool:
    """Whether offset ``at`` of ``text`` lies inside a fenced code block (``` or ~~~): an odd
    number of fence lines end before it; one left open runs to the end."""
    return bisect.bisect_right(_fence_ends(text), at) % 2 == 1


@functools.lru_cache(maxsize=64)
def _fence_ends(text: str) -> list[int]:
    """Where each fence line of ``text`` ends: read once per source, not once per sentence."""
    return [m.end() for m in _FENCE_LINE.finditer(text)]


@dataclass(frozen=True)
class Sentence:
    start: int  # span in the text that was split (whitespace trimmed)
    end: int
    text: str  # the span with soft line wraps joined
    heading: bool = False  # a heading line of plain text ("3.2 Travel Policy" above its paragraph)


def prose_sentences(text: str, non_latin: bool) -> list[Sentence]:
    """The sentences of ``text`` written mainly outside the Latin script (``non_latin``) or mainly
    in it, lines of code left out: what the gate and the answerer weigh in one script."""
    return [s for s in split_sentences(text)
            if is_mainly_non_latin(s.text) == non_latin and not is_code(text, s.start, s.text)]


def split_sentences(text: str) -> list[Sentence]:
    """Non-empty sentences of ``text`` with their offsets; a plain-text heading line is a
    sentence of its own, marked ``heading``."""
    out: list[Sentence] = []
    for block_start, block_end, heading in _blocks(text):
        position = block_start
        if not heading:
            for m in _SENTENCE_END.finditer(text, block_start, block_end):
                _add(text, position, m.end(), out)
                position = m.end()
        _add(text, position, block_end, out, heading)
    return out


def _blocks(text: str) -> Iterator[tuple[int, int, bool]]:
    """Paragraph-like spans, and whether each is a heading: split at blank lines and around
    Markdown block lines; a heading line of plain text (``_plain_heading``) outside a fenced
    block is a block of its own."""
    start = None
    previous_closed = False
    fenced = False
    offset = 0
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        line_start, offset = offset, offset + len(line)
        fence = _FENCE_LINE.match(line) is not None
        in_code, fenced = fenced or fence, fenced != fence
        if not line.strip():
            if start is not None:
                yield start, line_start, False
            start, previous_closed = None, False
            continue
        heading = (not in_code and (start is None or lines[i - 1].rstrip()[-1:] in _SENTENCE_CLOSERS)
                   and _plain_heading(line, lines[i + 1] if i + 1 < len(lines) else ""))
        if start is not None and (heading or previous_closed or _BLOCK_LINE.match(line)):
            yield start, line_start, False
            start = None
        if heading:
            yield line_start, offset, True
            previous_closed = False
            continue
        if start is None:
            start = line_start
        previous_closed = bool(_CLOSED_LINE.match(line))
    if start is not None:
        yield start, len(text), False


def _plain_heading(line: str, following: str) -> bool:
    """Whether a line of plain text (a PDF's, a text file's) is a heading above the paragraph
    that follows it, not the first line of that paragraph: short, without a sentence's final
    punctuation, numbered ("3.2 Travel Policy"), in capitals or in title case (a Chinese one
    numbered: "2.1 管理员", "第三章 …": a short Chinese line is as often a wrap), and followed by
    a line that opens a sentence. Without this the heading was quoted as the start of its
    paragraph's first sentence."""
    text, after = line.strip(), following.strip()
    if not text or not after or _BLOCK_LINE.match(line) or text[-1] in _NOT_HEADING_END:
        return False
    if not (after[0].isupper() or after[0].isdigit() or has_han(after[0])):
        return False
    if has_han(text):
        return len(text) <= MAX_HEADING_HAN and not _WORD_END.search(text) and bool(_NUMBERED_HEADING.match(text))
    words = text.split()
    if len(words) > MAX_HEADING_WORDS or words[-1].casefold() in _FUNCTION_WORDS:
        return False
    if _NUMBERED_HEADING.match(text) or (text.isupper() and len(text) > 1):
        return True
    long_words = [w for w in words if len(w) > 3 and w.casefold() not in _FUNCTION_WORDS]
    return words[0][0].isupper() and bool(long_words) and all(w[0].isupper() for w in long_words)


def _add(text: str, start: int, end: int, out: list[Sentence], heading: bool = False) -> None:
    raw = text[start:end]
    stripped = raw.strip()
    if not stripped:
        return
    first = start + len(raw) - len(raw.lstrip())
    out.append(Sentence(first, first + len(stripped), _WRAP.sub(_join, stripped), heading))


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
