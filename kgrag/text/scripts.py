"""Which writing system a character belongs to: the one place kgrag names Unicode ranges.

Every range is written here once; the character classes below are composed from them, each for
one question a caller asks. They differ on purpose — the answers differ — and sit side by side
so that the difference is visible (no other module writes a ``\\u`` range):

=====================  ===========================================  ===============================
class                  ranges                                       question
=====================  ===========================================  ===============================
``HAN``                Han ideographs (URO, Ext. A, compatibility)  is this text Chinese? (BM25's
                                                                    jieba runs, jieba NER, answer
                                                                    language, t2s conversion)
``UNSPACED``           kana + Han                                   written without spaces: may a
                                                                    name start at any character?
                                                                    (gazetteer units)
``CHAR_BREAKABLE``     kana + Han + Hangul syllables                may a chunk be cut between any
                                                                    two characters? (chunker)
``NO_SPACE_AROUND``    CJK punctuation + Han + full-width forms     is a soft line wrap next to it
                                                                    dropped? (answer sentences)
``NER_MASKED``         Han + CJK punctuation + kana +               what must the English NER model
                       full-width punctuation                       not read? (mixed texts)
=====================  ===========================================  ===============================
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# -- ranges (inside a regex character class) -------------------------------------------------
HAN_RANGES = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Ext. A, URO, compatibility ideographs
KANA_RANGES = "\u3040-\u30ff"  # hiragana and katakana
HANGUL_RANGES = "\uac00-\ud7af"  # precomposed syllables
CJK_PUNCT_RANGES = "\u3000-\u303f"  # ideographic space, 。、「」 …
FULLWIDTH_FORMS_RANGES = "\uff00-\uffef"  # half-width and full-width forms (ＬＣＡ，！ …)
FULLWIDTH_PUNCT_RANGES = "\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"  # the forms minus letters/digits
SURROGATE_RANGES = "\ud800-\udfff"  # UTF-16 halves: in a Python str only a lone one (no encoding holds it)

# -- classes, by question (see the table above) ----------------------------------------------
HAN = HAN_RANGES
UNSPACED = KANA_RANGES + HAN_RANGES
CHAR_BREAKABLE = KANA_RANGES + HAN_RANGES + HANGUL_RANGES
NO_SPACE_AROUND = CJK_PUNCT_RANGES + HAN_RANGES + FULLWIDTH_FORMS_RANGES
NER_MASKED = HAN_RANGES + CJK_PUNCT_RANGES + KANA_RANGES + FULLWIDTH_PUNCT_RANGES

HAN_RUN = re.compile(f"[{HAN}]+")
NER_MASKED_RUN = re.compile(f"[{NER_MASKED}]+")
_HAN_CHAR = re.compile(f"[{HAN}]")
_CHAR_BREAKABLE = re.compile(f"[{CHAR_BREAKABLE}]")
_NO_SPACE_AROUND = re.compile(f"[{NO_SPACE_AROUND}]")
_LATIN_CAPITAL = re.compile(r"[A-Z]")


def has_han(text: str) -> bool:
    """Whether ``text`` contains a Han character (is written, at least in part, in Chinese)."""
    return _HAN_CHAR.search(text) is not None


def han_runs(text: str) -> Iterator[re.Match[str]]:
    """Maximal runs of Han characters in ``text``, in order."""
    return HAN_RUN.finditer(text)


def is_char_breakable(char: str) -> bool:
    """Whether text may be cut next to ``char`` without splitting a word: kana, Han, Hangul."""
    return _CHAR_BREAKABLE.match(char) is not None


def is_no_space_char(char: str) -> bool:
    """Han, CJK and full-width punctuation: no space is written next to them."""
    return bool(char) and _NO_SPACE_AROUND.match(char) is not None


def has_latin_capital(text: str) -> bool:
    """Whether ``text`` has an ASCII capital letter (an English name needs one)."""
    return _LATIN_CAPITAL.search(text) is not None



# A text is "mainly non-Latin" when at least this share of its letters lie outside the Latin
# script (Han, kana, Hangul, Cyrillic ...). Chinese prose quoting English names ("LCA 是最近公共
# 祖先") stays Chinese; an English article citing one Chinese name stays English. One Han
# character carries about as much as a short English word, so letters are counted one by one on
# both sides and the bar is set well under one half.
MAINLY_NON_LATIN_SHARE = 0.3
LATIN_RANGES = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"  # Basic Latin .. Extended-B letters
_LATIN_LETTER = re.compile(f"[{LATIN_RANGES}]")
_NON_LATIN_LETTER = re.compile(f"[^\\W\\d_{LATIN_RANGES}]")


def is_mainly_non_latin(text: str) -> bool:
    """Whether ``text`` is written mainly outside the Latin script (see
    ``MAINLY_NON_LATIN_SHARE``): which embedder a text goes to (``kgrag.models.routed``)."""
    other = len(_NON_LATIN_LETTER.findall(text))
    if other == 0:
        return False
    latin = len(_LATIN_LETTER.findall(text))
    return other >= MAINLY_NON_LATIN_SHARE * (latin + other)


def is_mainly_han(text: str) -> bool:
    """Whether ``text`` is written mainly in Han characters (Chinese): the same share as
    ``is_mainly_non_latin``, counting Han letters only. What makes a corpus bilingual for
    cross-lingual embedding (``kgrag.ingest.job``): one Mongolian-script passage among
    thousands of English ones is not a Chinese corpus."""
    han = len(_HAN_CHAR.findall(text))
    if han == 0:
        return False
    latin = len(_LATIN_LETTER.findall(text))
    return han >= MAINLY_NON_LATIN_SHARE * (latin + han)


_LATIN_WORD = re.compile(f"[{LATIN_RANGES}]+")
_OTHER_LETTER = re.compile(f"[^\\W\\d_{LATIN_RANGES}{HAN}]")


def script_counts(text: str) -> tuple[int, int, int]:
    """(Han characters, Latin-script words, other letters: kana, Hangul, Cyrillic ...) in
    ``text``: what a document's language facet is decided from (``kgrag.facets``)."""
    return len(_HAN_CHAR.findall(text)), len(_LATIN_WORD.findall(text)), len(_OTHER_LETTER.findall(text))


_TEXT_UNIT = re.compile(f"[{CHAR_BREAKABLE}]|[^\\s{CHAR_BREAKABLE}]+")


def opening(text: str, units: int) -> str:
    """The start of ``text`` holding at most ``units`` units: a Han, kana or Hangul character is
    one, and so is each other run of non-space characters (a word, a number). Close to a
    subword model's token count in either script, where a character budget is not: 600
    characters are ~100 words of English but ~450 tokens of Chinese."""
    if units <= 0:
        return ""
    for i, match in enumerate(_TEXT_UNIT.finditer(text)):
        if i == units:
            return text[: match.start()].rstrip()
    return text
