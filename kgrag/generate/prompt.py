"""Numbered sources from retrieval hits, and the chat messages that ask for a cited answer."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import replace

from kgrag.generate.types import Source
from kgrag.lexicon.scripts import has_han
from kgrag.retrieve.types import Hit

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
    is cut to a window around the matched child chunk(s), the text that actually matched.
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
    end = start + limit
    # Prefer whole words at the edges; Chinese has no spaces, so cut anywhere there.
    if start > 0:
        space = text.find(" ", start, start + 40)
        if space != -1:
            start = space + 1
    if end < len(text):
        space = text.rfind(" ", end - 40, end)
        if space > start:
            end = space
    piece = text[start:end]
    lead = len(piece) - len(piece.lstrip())
    return piece.strip(), context.start + start + lead


def build_messages(question: str, sources: Sequence[Source], today: dt.date | None = None) -> list[dict[str, str]]:
    """The chat messages asking for a cited answer. ``today``: said before the question, so that
    "the current fiscal quarter" or "last month" can be worked out from the sources' dates."""
    # "Source [n] (header):" rather than a bare "[n] header": small models echo a bare header
    # line back as if it were part of the answer.
    blocks = [f"Source [{s.n}] ({s.header}):\n{s.text}" for s in sources]
    language = "Chinese" if has_han(question) else "English"
    day = f"\n\nToday is {today.isoformat()} ({today.strftime('%A')})." if today is not None else ""
    user = (
        "\n\n".join(blocks)
        + day
        + f"\n\nQuestion: {question}\n"
        + f"Write the answer in {language} with a citation like [1] after each sentence."
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
