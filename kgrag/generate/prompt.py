"""Numbered sources from retrieval hits, and the chat messages that ask for a cited answer."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import replace

from kgrag.generate.types import Source
from kgrag.retrieve.types import Hit
from kgrag.text.scripts import has_han, is_mainly_non_latin

NOT_IN_KB_EN = "The knowledge base does not contain the answer."
NOT_IN_KB_ZH = "知识库中没有相关信息。"

SYSTEM_PROMPT = (
    "You answer questions using only the numbered sources you are given. "
    "After every sentence, cite the source it comes from with its number in square brackets, "
    "for example [1] or [2][3]. Cite only numbers of sources you were given. "
    "Do not use outside knowledge. If the sources do not contain the answer, reply exactly: "
    f'"{NOT_IN_KB_EN}" (for a question in Chinese: "{NOT_IN_KB_ZH}"). '
    "Answer briefly, in the language of the question."
)


def build_sources(hits: Sequence[Hit], max_sources: int, max_context_chars: int, *,
                  context: str = "parent", order: str = "rank") -> list[Source]:
    """Sources [1]..[n] in hit order; hits sharing a context (same parent) share a source.

    The character budget is shared out in order: each source gets an equal part of what is
    left, so a short source leaves more for the ones after it. A context longer than its part
    is cut to a window around the matched child chunk(s), the text that actually matched, whose
    first sentence is whole (the window may open up to ``EDGE_REACH`` characters early: the last
    source may overrun the budget by that much).
    ``context="chunk"``: a source is the matched child chunk alone, not its parent section.
    ``order="best_last"``: the same sources numbered from the weakest, the best one last (next
    to the question in the prompt).
    """
    if context == "chunk":
        hits = [replace(h, parent=None) for h in hits]
    groups: list[list[Hit]] = []
    by_context: dict[str, list[Hit]] = {}
    for hit in hits:
        key = hit.context.id
        if key in by_context:
            by_context[key].append(hit)
        elif len(groups) < max_sources:
            by_context[key] = [hit]
            groups.append(by_context[key])
    if order == "best_last":
        groups.reverse()
    sources: list[Source] = []
    left = max_context_chars
    for i, group in enumerate(groups):
        share = max(left // (len(groups) - i), 1)
        text, offset = _window(group, share)
        left -= len(text)
        sources.append(Source(n=i + 1, hits=group, text=text, offset=offset))
    return sources


def _window(group: list[Hit], limit: int) -> tuple[str, int]:
    context = group[0].context
    text = context.text
    if len(text) <= limit:
        return text, context.start
    # Centre on the span of the matched children; chunk offsets are document offsets.
    lo = min(h.chunk.start for h in group) - context.start
    hi = max(h.chunk.end for h in group) - context.start
    if not (0 <= lo < hi <= len(text)):  # stand-alone chunk or offsets unknown
        lo, hi = 0, min(len(text), limit)
    middle = (lo + hi) // 2
    start = max(0, min(middle - limit // 2, len(text) - limit))
    # The window opens where the sentence it would cut opens (the answer quotes whole sentences:
    # "Specialists carry …", not "carry …"), up to EDGE_REACH characters over the limit, and
    # closes after the last whole sentence it holds. It opens no earlier than keeps the matched
    # children in it, or, when they are longer than it, than the sentence they start in (a child
    # chunk may start mid-sentence, after the chunker's overlap).
    end = min(start + limit, len(text))
    if start > 0:
        matched_sentence = _sentence_start(text, lo, earliest=0) if lo > 0 else 0
        start = _sentence_start(text, start, earliest=min(matched_sentence, hi - limit))
    if end < len(text):
        end = _sentence_end(text, end, earliest=min(hi, end) if hi > start else start + 1)
    piece = text[start:end]
    lead = len(piece) - len(piece.lstrip())
    return piece.strip(), context.start + start + lead


# Where a sentence or a block ends: sentence punctuation (before a space, for Latin script), a
# blank line, or a line break before a list item, table line, heading or quote (a soft-wrapped
# line is no end).
_SENTENCE_END = re.compile(r"[.!?;](?=\s)|[。！？；]|\n(?=[ \t]*\n)|\n(?=[ \t]*(?:[-*+|#>]|\d{1,3}[.)])\s?)")
_SPACE = re.compile(r"\s+")
EDGE_REACH = 160  # characters a window's edge may move to fall between two sentences


def _sentence_start(text: str, at: int, earliest: int) -> int:
    """Where a window starting at ``at`` should start: where the sentence ``at`` falls in opens,
    if that is within ``EDGE_REACH`` and not before ``earliest``; else the next word's start
    (Chinese has no spaces: ``at``)."""
    ends = [m.end() for m in _SENTENCE_END.finditer(text, max(0, at - EDGE_REACH, earliest), at)]
    if ends:
        return ends[-1]
    if at <= EDGE_REACH and earliest <= 0:
        return 0  # the text's own start opens the sentence
    space = _SPACE.search(text, at, at + 40)
    return space.end() if space else at


def _sentence_end(text: str, at: int, earliest: int) -> int:
    """Where a window ending at ``at`` should end: after the last sentence that ends by then, if
    that is within ``EDGE_REACH`` and not before ``earliest``; else after the last whole word."""
    ends = [m.end() for m in _SENTENCE_END.finditer(text, max(0, at - EDGE_REACH, earliest), at)]
    if ends:
        return ends[-1]
    spaces = list(_SPACE.finditer(text, max(at - 40, earliest), at))
    return spaces[-1].start() if spaces and spaces[-1].start() > 0 else at


def build_messages(question: str, sources: Sequence[Source], today: dt.date | None = None,
                   worked_out: str | None = None) -> list[dict[str, str]]:
    """The chat messages asking for a cited answer. ``today``: said before the question, so that
    "the current fiscal quarter" or "last month" can be worked out from the sources' dates.
    ``worked_out``: a date already worked out for today from a source's rule (``dated``), said
    after it — calendar arithmetic is where small models slip."""
    # "Source [n] (header):" rather than a bare "[n] header": small models echo a bare header
    # line back as if it were part of the answer.
    blocks = [f"Source [{s.n}] ({s.header}):\n{s.text}" for s in sources]
    language = "Chinese" if has_han(question) else "English"
    if any(is_mainly_non_latin(s.text) != is_mainly_non_latin(question) for s in sources):
        language += ", also where the sources are written in another language"
    day = f"\n\nToday is {today.isoformat()} ({today.strftime('%A')})." if today is not None else ""
    if worked_out:
        day += f" {worked_out}"
    user = (
        "\n\n".join(blocks)
        + day
        + f"\n\nQuestion: {question}\n"
        + f"Write the answer in {language} with a citation like [1] after each sentence."
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
