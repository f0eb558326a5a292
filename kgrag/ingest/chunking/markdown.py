"""Where the headings and fenced code blocks of a Markdown text are, as character offsets.

markdown-it-py does the parsing (CommonMark: ATX and setext headings, fences inside lists,
unclosed fences running to the end) so that we never mistake a ``#`` comment inside a code
block for a heading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token


@dataclass(frozen=True)
class Heading:
    start: int  # offset of the heading line
    end: int  # offset just after the heading line(s), newline included
    level: int  # 1..6
    title: str  # plain text, without the #'s or inline markup


@dataclass(frozen=True)
class Outline:
    headings: list[Heading]
    fences: list[tuple[int, int]]  # fenced code blocks, opening fence to closing fence line


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark")


_NEWLINE = re.compile(r"\n")


def _inline_text(token: Token) -> str:
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split())


def outline(text: str) -> Outline:
    """Top-level headings (not inside quotes or lists) and every fenced code block."""
    # Same-length substitutions keep markdown-it's line numbers equal to our "\n"-split lines.
    parsed = text.replace("\r\n", " \n").replace("\r", "\n")
    line_starts = [0] + [m.end() for m in _NEWLINE.finditer(parsed)]

    def offset(line: int) -> int:
        return line_starts[line] if line < len(line_starts) else len(text)

    headings: list[Heading] = []
    fences: list[tuple[int, int]] = []
    tokens = _parser().parse(parsed)
    for index, token in enumerate(tokens):
        if token.map is None:
            continue
        if token.type == "heading_open" and token.level == 0:
            title = _inline_text(tokens[index + 1])
            if title:
                start, end = token.map
                headings.append(Heading(offset(start), offset(end), int(token.tag[1]), title))
        elif token.type == "fence":
            start, end = token.map
            fences.append((offset(start), offset(end)))
    return Outline(headings, fences)
