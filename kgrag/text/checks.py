"""Characters text from outside may not carry: lone surrogates (a JSON ``"\\udfff"`` parses to
one, and nothing can encode it: SQLite, UTF-8 responses and logs failed on it with a 500) and
control characters in names (ids, aliases: NUL and ESC were stored and shown)."""

from __future__ import annotations

import re
import unicodedata

from kgrag.text.scripts import SURROGATE_RANGES

_SURROGATE = re.compile(f"[{SURROGATE_RANGES}]")


def lone_surrogate(text: str) -> str | None:
    """The first lone surrogate in ``text`` as ``U+XXXX``, or None."""
    found = _SURROGATE.search(text)
    return None if found is None else f"U+{ord(found.group()):04X}"


def control_character(text: str) -> str | None:
    """The first control character (Unicode category Cc: NUL, ESC, tab, newline, ...) in
    ``text`` as ``U+XXXX``, or None."""
    for ch in text:
        if unicodedata.category(ch) == "Cc":
            return f"U+{ord(ch):04X}"
    return None
