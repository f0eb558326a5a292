"""A document's structure as regions that tile its text: sections, headings, code fences, definitions.

Each region records how strong the boundary before it is (a heading or a top-level
definition beats a blank line, which beats a sentence end) and the section path it lies in.
The packer prefers to break at the strongest boundary, so structure decides where chunks end.
"""

from __future__ import annotations

import ast
import re
import warnings
from bisect import bisect_right
from dataclasses import dataclass
from typing import Literal

from kgrag.ingest.chunking.markdown import outline

# Boundary strengths, weakest first. Structural boundaries (>= STRUCTURAL) start a new section
# or definition: overlap never reaches across them, and the packer breaks at them even when
# that leaves a chunk less than half full.
CHAR, WORD, CLAUSE, SENTENCE, LINE, PARA = range(6)
STRUCTURAL = 10
METHOD = STRUCTURAL + 1
DEFINITION = STRUCTURAL + 2


def heading_strength(level: int) -> int:
    return STRUCTURAL + 7 - level  # h1 = 16 … h6 = 11


# Formats whose loaded text is Markdown (the loaders rewrite HTML, Word, PowerPoint, PDF and
# Jupyter notebooks as Markdown).
MARKDOWN_FORMATS = frozenset({"md", "html", "docx", "pptx", "pdf", "ipynb"})

RegionKind = Literal["prose", "code", "fence", "heading"]


@dataclass(frozen=True)
class Region:
    start: int
    end: int
    kind: RegionKind  # prose/code: split by their own separators; fence: never split
    strength: int  # of the boundary before this region
    path: tuple[str, ...]  # section trail (Markdown) or definition names (code)


@dataclass(frozen=True)
class Structure:
    regions: list[Region]
    # Parents never cross a boundary at least this strong (Markdown top-level sections).
    forced_break: int | None = None


def _tile(text: str, regions: list[Region]) -> list[Region]:
    """Fold whitespace-only regions into their neighbour so that every region holds text."""
    kept: list[Region] = []
    for region in regions:
        if region.start >= region.end:
            continue
        if text[region.start : region.end].strip():
            kept.append(region)
        elif kept:
            last = kept[-1]
            kept[-1] = Region(last.start, region.end, last.kind, last.strength, last.path)
    if kept and kept[0].start > 0:
        first = kept[0]
        kept[0] = Region(0, first.end, first.kind, first.strength, first.path)
    return kept


def markdown_structure(text: str) -> Structure:
    parsed = outline(text)
    events = sorted(
        [(h.start, h.end, h) for h in parsed.headings] + [(s, e, None) for s, e in parsed.fences],
        key=lambda event: event[0],
    )
    regions: list[Region] = []
    trail: list[tuple[int, str]] = []  # (level, title) of the enclosing headings
    cursor, next_strength = 0, PARA
    for start, end, heading in events:
        path = tuple(title for _, title in trail)
        regions.append(Region(cursor, start, "prose", next_strength, path))
        if heading is None:
            regions.append(Region(start, end, "fence", PARA, path))
        else:
            while trail and trail[-1][0] >= heading.level:
                trail.pop()
            trail.append((heading.level, heading.title))
            path = tuple(title for _, title in trail)
            regions.append(Region(start, end, "heading", heading_strength(heading.level), path))
        cursor, next_strength = end, PARA
    regions.append(Region(cursor, len(text), "prose", next_strength, tuple(t for _, t in trail)))

    levels = [h.level for h in parsed.headings]
    repeated = [level for level in set(levels) if levels.count(level) > 1]
    forced = heading_strength(min(repeated)) if repeated else None
    return Structure(_tile(text, regions), forced)


# --- code ---------------------------------------------------------------------------------

_MODIFIERS = (
    r"(?:(?:export|default|public|private|protected|internal|static|final|abstract|async|sealed|open"
    r"|override|inline|unsafe|extern|virtual|pub(?:\([\w:]+\))?|data|suspend|partial|declare|case"
    r"|implicit|lazy)\s+)*"
)
_KEYWORD_DEFINITION = re.compile(
    r"^" + _MODIFIERS + r"(?:function\*?|func|fn|fun|def|sub|class|interface|struct|enum|trait"
    r"|impl(?:<[^>\n]*>)?|module|object|record|namespace|union|type)[ \t]+(?:\([^)\n]*\)[ \t]*)?"
    r"(?P<name>[A-Za-z_$][\w$]*)",
    re.M,
)
_JS_ARROW = re.compile(
    r"^(?:export[ \t]+)?(?:const|let|var)[ \t]+(?P<name>[A-Za-z_$][\w$]*)[ \t]*=[ \t]*(?:async[ \t]+)?"
    r"(?:function\b|\([^)\n]*\)[ \t]*=>|[A-Za-z_$][\w$]*[ \t]*=>)",
    re.M,
)
_SHELL_FUNCTION = re.compile(r"^(?P<name>[A-Za-z_][\w-]*)[ \t]*\(\)[ \t]*\{?[ \t]*$", re.M)
# C family: a column-0 line with a return type, a name and "(" that is not a statement.
_C_FUNCTION = re.compile(
    r"^(?!(?:if|for|while|switch|return|else|do|case|typedef|using|goto)\b)[A-Za-z_][\w:<>,*&\t ]*?"
    r"[\t *&](?P<name>[A-Za-z_~][\w:~]*)[ \t]*\([^;\n]*$",
    re.M,
)
_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    "javascript": (_KEYWORD_DEFINITION, _JS_ARROW),
    "typescript": (_KEYWORD_DEFINITION, _JS_ARROW),
    "shell": (_KEYWORD_DEFINITION, _SHELL_FUNCTION),
    "c": (_KEYWORD_DEFINITION, _C_FUNCTION),
    "cpp": (_KEYWORD_DEFINITION, _C_FUNCTION),
    "csharp": (_KEYWORD_DEFINITION, _C_FUNCTION),
    "java": (_KEYWORD_DEFINITION, _C_FUNCTION),
}
# Comments, decorators and annotations right above a definition belong to it.
_LEADING_LINE = re.compile(r"^[ \t]*(?:#|//|/\*|\*|@)")


@dataclass(frozen=True)
class _Definition:
    first_line: int  # 0-based, inclusive
    end_line: int | None  # 0-based, exclusive; None = until the next definition
    path: tuple[str, ...]
    strength: int


def _with_leading_comments(lines: list[str], first: int, floor: int) -> int:
    while first > floor and _LEADING_LINE.match(lines[first - 1]):
        first -= 1
    return first


def _python_definitions(text: str, lines: list[str]) -> list[_Definition] | None:
    try:
        with warnings.catch_warnings():  # e.g. invalid escape sequences: not our concern here
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    found: list[_Definition] = []
    floor = 0
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            floor = node.end_lineno or floor
            continue
        first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
        first = _with_leading_comments(lines, first, floor)
        found.append(_Definition(first, node.end_lineno, (node.name,), DEFINITION))
        if isinstance(node, ast.ClassDef):
            inner_floor = first + 1
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    m_first = min([member.lineno] + [d.lineno for d in member.decorator_list]) - 1
                    m_first = _with_leading_comments(lines, m_first, inner_floor)
                    found.append(_Definition(m_first, member.end_lineno, (node.name, member.name), METHOD))
                inner_floor = member.end_lineno or inner_floor
        floor = node.end_lineno or floor
    return found


def _pattern_definitions(
    text: str, lines: list[str], line_starts: list[int], language: str
) -> list[_Definition]:
    starts: dict[int, str] = {}
    for pattern in _PATTERNS.get(language, (_KEYWORD_DEFINITION,)):
        for match in pattern.finditer(text):
            line = bisect_right(line_starts, match.start()) - 1
            starts.setdefault(line, match.group("name"))
    found: list[_Definition] = []
    floor = 0
    for line in sorted(starts):
        first = _with_leading_comments(lines, line, floor)
        found.append(_Definition(first, None, (starts[line],), DEFINITION))
        floor = line + 1
    return found


def code_structure(text: str, language: str) -> Structure:
    lines = text.split("\n")
    line_starts = [0]
    for line in lines:
        line_starts.append(line_starts[-1] + len(line) + 1)
    definitions = _python_definitions(text, lines) if language == "python" else None
    if definitions is None:  # not Python, or Python that does not parse
        definitions = _pattern_definitions(text, lines, line_starts, language)

    def offset(line: int) -> int:
        return min(line_starts[line], len(text))

    regions: list[Region] = []
    # Walk definitions in order, keeping a stack of the open ones (a class around its methods).
    open_defs: list[_Definition] = []
    cursor, strength = 0, PARA
    for definition in definitions:
        start = offset(definition.first_line)
        while open_defs and open_defs[-1].end_line is not None and offset(open_defs[-1].end_line) <= start:
            closed = open_defs.pop()
            end = offset(closed.end_line)  # type: ignore[arg-type]
            if cursor < end:
                regions.append(Region(cursor, end, "code", strength, closed.path))
                cursor = end
            strength = closed.strength
        enclosing = open_defs[-1].path if open_defs else ()
        regions.append(Region(cursor, start, "code", strength, enclosing))
        if definition.end_line is None:
            open_defs = []  # pattern-found definitions run until the next one
        open_defs.append(definition)
        cursor, strength = start, definition.strength
    while open_defs:
        closed = open_defs.pop()
        end = len(text) if closed.end_line is None else offset(closed.end_line)
        regions.append(Region(cursor, max(cursor, end), "code", strength, closed.path))
        cursor, strength = max(cursor, end), closed.strength
    regions.append(Region(cursor, len(text), "code", strength, ()))
    return Structure(_tile(text, regions))


def plain_structure(text: str) -> Structure:
    return Structure([Region(0, len(text), "prose", PARA, ())] if text.strip() else [])


def document_structure(text: str, fmt: str, language: str | None) -> Structure:
    if fmt in MARKDOWN_FORMATS:
        return markdown_structure(text)
    if fmt == "code":
        return code_structure(text, language or "")
    return plain_structure(text)
