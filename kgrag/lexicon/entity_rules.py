"""Two rules on names found during ingestion, kept apart from the extractor so they can change
without touching how names are found (``kgrag.ingest.extract`` calls them at two points;
``kgrag.aliases.suggest`` reads the first for duplicates already stored).

- ``parenthesised_alias_keys``: "Lowest Common Ancestor (LCA)" is the entity already known as
  "Lowest Common Ancestor" when the parenthesised part is one of its aliases (or the initials
  of its name). Without the rule the document titled so becomes a second entity beside the
  glossary's, and the demo's flagship alias "LCA" is ambiguous. A disambiguation that is no
  alias ("Black Book (film)") is left alone: the film is not the novel.
- ``is_noise_name``: a recognised span that is mostly digits and symbols ("− 2 × depth",
  "3.5 %", "(1)") or a formula fragment names nothing; it is not made an entity. Gazetteer
  matches (known names) never pass through this filter.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence

_PARENTHESISED = re.compile(r"^(?P<name>.+?)\s*[(（](?P<alias>[^()（）]+)[)）]\s*$")
_OPERATOR = re.compile(r"[=+×÷−*/^<>≤≥±∑∏√]")  # not the en dash: "1996 Nottingham Open – Singles"
_OPERAND = re.compile(r"^(?:\d+(?:[.,]\d+)?|[A-Za-z])$")
MAX_SYMBOL_SHARE = 0.3  # of the non-space characters: over this, a span is no name
_NAME_PUNCTUATION = frozenset("-.'’&·・()（）:–!！?？")  # in names: "Jean-Luc", "U.S.", "AT&T", "王沈 (太原)"


def parenthesised_alias_keys(name: str, lookup: Callable[[str], Sequence[str]]) -> list[str]:
    """Keys of the known entity that ``name`` = "<its name> (<its alias>)" is, or [] when it is
    not of that form or the parenthesised part is no alias of the same entity."""
    m = _PARENTHESISED.match(name.strip())
    if m is None:
        return []
    base, alias = m.group("name").strip(), m.group("alias").strip()
    base_keys = list(lookup(base))
    if not base_keys:
        return []
    alias_keys = set(lookup(alias))
    shared = [k for k in base_keys if k in alias_keys]
    if shared:
        return shared
    return base_keys if _initials(base) == alias.replace(".", "").upper() and len(alias) >= 2 else []


def _initials(name: str) -> str:
    return "".join(w[0] for w in re.findall(r"[A-Za-z][\w'-]*", name)).upper()


def is_noise_name(surface: str) -> bool:
    """Whether a recognised span is digits/symbols or a piece of a formula rather than a name:
    no letter at all ("3.5 %", "(1)"), symbols for a large share of it, or an operator between
    operands. Model numbers keep their digits and hyphens ("F-16", "Spider-Man 2", "C++")."""
    chars = [ch for ch in surface.rstrip("+#") if not ch.isspace()]  # "C++", "C#" are names
    if not any(unicodedata.category(ch).startswith("L") for ch in chars):
        return True
    symbols = sum(1 for ch in chars if unicodedata.category(ch)[0] in "PS" and ch not in _NAME_PUNCTUATION)
    if symbols / len(chars) > MAX_SYMBOL_SHARE:
        return True
    return _is_formula(surface)


def _is_formula(surface: str) -> bool:
    """An operator next to a number or a one-letter variable: "− 2 × depth", "n + 1", "x = y".
    An operator between words ("Griqualand West / Griquas") is not; a hyphen inside a word
    ("Jean-Luc") is no operator."""
    tokens = [t for t in re.split(r"\s+", surface.strip()) if t]
    for i, token in enumerate(tokens):
        if _OPERATOR.fullmatch(token) or (_OPERATOR.match(token) and _OPERAND.match(token[1:])):
            neighbours = [token[1:]] + tokens[max(0, i - 1) : i] + tokens[i + 1 : i + 2]
            if any(_OPERAND.match(n) for n in neighbours if n):
                return True
    return False
