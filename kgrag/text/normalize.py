"""Alias normalization: one function decides when two surface forms are the same name.

Used when an alias is stored and when it is looked up, by every store and by query-time
entity linking, so "ＬＣＡ", "lca" and "L.C.A." all meet at "lca".
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_PUNCT_OR_SPACE = re.compile(r"[\s\W_]+", re.UNICODE)
# Dots and apostrophes inside a name fold away entirely ("L.C.A." == "LCA", "O'Neil" ==
# "ONeil") rather than becoming a space; hyphens become a space ("Common-Ancestor").
_JOINERS = re.compile(r"(?<=\w)[.'’](?=\w)")


@lru_cache(maxsize=1)
def _t2s():
    """Traditional → simplified Chinese converter, when OpenCC is installed (optional)."""
    try:
        import opencc  # type: ignore

        return opencc.OpenCC("t2s")
    except Exception:  # not installed, or a build without its data files
        return None


@lru_cache(maxsize=200_000)
def normalize_alias(name: str) -> str:
    """Case fold, full-width → half-width (NFKC), fold punctuation and whitespace runs."""
    s = unicodedata.normalize("NFKC", name).casefold()
    s = _JOINERS.sub("", s)
    s = _PUNCT_OR_SPACE.sub(" ", s).strip()
    conv = _t2s()
    if conv is not None and any("\u4e00" <= ch <= "\u9fff" for ch in s):
        s = conv.convert(s)
    return s
