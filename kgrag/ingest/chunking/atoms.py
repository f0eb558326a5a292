"""Cut regions into atoms: the smallest spans a chunk is built from (sentences, lines, fences).

Prose is always cut down to sentences so that overlap can be taken at sentence boundaries;
an atom still longer than a child is cut further, only as far as it must be: clauses
("，", ", "), then words, then a hard cut. Every cut remembers the strength of the separator it
was made at, which is what the packer uses to choose where chunks end.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from kgrag.ingest.chunking.structure import (
    CHAR,
    CLAUSE,
    LINE,
    PARA,
    SENTENCE,
    WORD,
    Region,
    RegionKind,
)
from kgrag.text.scripts import is_char_breakable

Count = Callable[[str], int]

_NEWLINES = re.compile(r"\n\s*")
# A sentence ends at 。！？； (closing quotes and brackets stay with it), or at . ! ? ; followed by
# whitespace; a "." followed by a lower-case word is an abbreviation ("e.g. the"), not an end.
_SENTENCE_END = re.compile(
    r"[。！？；]+[”’」』）》\"']*[ \t]*"
    r"|[!?;]+[\"'”’)\]]*[ \t]+"
    r"|\.+[\"'”’)\]]*[ \t]+(?![a-z])"
)
_CLAUSE_END = re.compile(r"[，、：]|[,:][ \t]+")
_SPACES = re.compile(r"[ \t]+")
_BLANK = re.compile(r"\s*")


@dataclass
class Atom:
    start: int
    end: int
    strength: int  # of the boundary before this atom
    kind: RegionKind
    protect: int  # no cut before this offset (keeps a heading glued to its body)
    size: int = 0  # in the configured unit, filled once the atom is final


def _newline_strength(run: str, fmt: str) -> int:
    if run.count("\n") >= 2:
        return PARA
    # A PDF's wrapped lines are joined into paragraphs by its loader: a line break left is a
    # table row's end, as in any Markdown text.
    return LINE


def _split(text: str, whole: Atom, found: dict[int, int]) -> list[Atom]:
    """Cut ``whole`` at the candidate offsets in ``found`` (offset → strength).

    No atom is only whitespace: whitespace joins the atom before it (or, at the very start, the
    first atom), and the boundary keeps the strongest separator it absorbed.
    """
    cuts: list[tuple[int, int]] = []
    for position in sorted(found):
        if position <= whole.start or position >= whole.end:
            continue
        strength = found[position]
        previous = cuts[-1][0] if cuts else whole.start
        if _BLANK.fullmatch(text, previous, position):
            if not cuts:
                continue
            strength = max(strength, cuts.pop()[1])
        cuts.append((position, strength))
    if cuts and _BLANK.fullmatch(text, cuts[-1][0], whole.end):
        cuts.pop()
    starts = [(whole.start, whole.strength), *cuts]
    ends = [position for position, _ in cuts] + [whole.end]
    return [
        Atom(start, end, strength, whole.kind, whole.protect if index == 0 else start)
        for index, ((start, strength), end) in enumerate(zip(starts, ends, strict=True))
    ]


def _add(found: dict[int, int], position: int, strength: int) -> None:
    if found.get(position, -1) < strength:
        found[position] = strength


def region_atoms(text: str, region: Region, fmt: str) -> list[Atom]:
    """A region cut at blank lines, lines and (prose) sentence ends; fences and headings stay whole."""
    start, end, kind = region.start, region.end, region.kind
    found: dict[int, int] = {}
    if kind in ("prose", "code"):
        for match in _NEWLINES.finditer(text, start, end):
            _add(found, match.end(), _newline_strength(match.group(), fmt))
    if kind == "prose":
        for match in _SENTENCE_END.finditer(text, start, end):
            _add(found, match.end(), SENTENCE)
    return _split(text, Atom(start, end, region.strength, kind, start), found)


def glue_headings(atoms: list[Atom]) -> list[Atom]:
    """Merge every heading with the atom after it, so no chunk ends with a bare heading."""
    glued: list[Atom] = []
    for atom in reversed(atoms):
        if atom.kind == "heading" and glued:
            body = glued.pop()
            atom = Atom(atom.start, body.end, atom.strength, body.kind, body.protect)
        glued.append(atom)
    glued.reverse()
    return glued


def _hard_cut(start: int, end: int, protect: int, limit: int, count: Count, text: str) -> int:
    """The furthest offset q (> start, >= protect) with count(text[start:q]) <= limit."""
    if count is len:
        return min(end, max(start + limit, protect, start + 1))
    lo, hi = max(start + 1, protect), end
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[start:mid]) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


Levels = list[tuple[re.Pattern[str] | None, int]]  # separator (None = anywhere), strength


def _finer(kind: RegionKind) -> Levels:
    if kind == "prose" or kind == "heading":
        return [(_CLAUSE_END, CLAUSE), (_SPACES, WORD), (None, CHAR)]
    return [(_SPACES, WORD), (None, CHAR)]


def refine(text: str, atom: Atom, limit: int, count: Count, levels: Levels | None = None) -> list[Atom]:
    """Cut an atom longer than ``limit`` at clauses, then words, then anywhere (fences never)."""
    if atom.kind == "fence" or count(text[atom.start : atom.end]) <= limit:
        return [atom]
    levels = _finer(atom.kind) if levels is None else levels
    pattern, strength = levels[0]
    if pattern is None:
        pieces: list[Atom] = []
        position, protect = atom.start, atom.protect
        while position < atom.end:
            cut = _hard_cut(position, atom.end, protect, limit, count, text)
            if _BLANK.fullmatch(text, cut, atom.end):
                cut = atom.end  # trailing whitespace is no atom of its own
            pieces.append(Atom(position, cut, atom.strength if not pieces else CHAR, atom.kind, protect))
            position = protect = cut
        return pieces
    found: dict[int, int] = {}
    for match in pattern.finditer(text, max(atom.start, atom.protect), atom.end):
        _add(found, match.end(), strength)
    return [
        finer
        for piece in _split(text, atom, found)
        for finer in refine(text, piece, limit, count, levels[1:])
    ]


def tail_start(text: str, atom: Atom, budget: int, count: Count) -> int | None:
    """Where an overlap of at most ``budget`` units inside ``atom`` can start.

    At a clause or word boundary when there is one; inside CJK text (no spaces) at any
    character; otherwise no overlap rather than half a word.
    """
    lo = max(atom.start, atom.protect) + 1
    end = atom.start + len(text[atom.start : atom.end].rstrip())  # trailing newline/indent
    candidates = [m.end() for m in _CLAUSE_END.finditer(text, lo, end)]
    candidates += [m.end() for m in _SPACES.finditer(text, lo, end)]
    for position in sorted(set(candidates)):
        if position < end and count(text[position:end]) <= budget:
            return position
    if count is len:
        position = max(lo, end - budget)
    else:
        position = end - 1
        while position > lo and count(text[position - 1 : end]) <= budget:
            position -= 1
    if lo <= position < end and is_char_breakable(text[position]) and is_char_breakable(text[position - 1]):
        return position
    return None
