"""Patterns questions and sources are read with, each written once: years, month names,
sentence ends, quotes, bracketed asides, pronouns and the words that ask when.

Modules build their own expressions from these pieces (a document constraint "reports from
2023", a date "June 15", a quoted phrase, a name's qualifier "(film)"), so two readers never
disagree about what a year or a quote is.
"""

from __future__ import annotations

# A year written in full, 1000–2099 (a pattern piece: callers add their own edges).
YEAR = r"(?:1\d{3}|20\d{2})"

# Month names with the abbreviations English writes, January first.
MONTHS: tuple[tuple[str, ...], ...] = (
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
    ("november", "nov"), ("december", "dec"),
)
MONTH_NUMBER: dict[str, int] = {name: i for i, names in enumerate(MONTHS, start=1) for name in names}
# Any month name or abbreviation (match case-insensitively), longest first, an abbreviation's
# dot optional: "Sept.", "September", "Sep".
MONTH_ALTERNATIVES = "|".join(sorted(MONTH_NUMBER, key=len, reverse=True))
MONTH_NAME = rf"(?:{MONTH_ALTERNATIVES})\.?"
# Only the full names, capitalised as English writes them (match case-sensitively: "may" is
# no month).
FULL_MONTH_NAME = r"(?:" + "|".join(names[0].capitalize() for names in MONTHS) + r")"

# Where a sentence ends: . ! ? and the Chinese full stops 。！？ (callers decide whether a space
# must follow the Latin ones, and whether ; ends one too).
SENTENCE_END_CHARS = ".!?。！？"

# Quotation marks, ASCII, typographic and CJK corner/angle quotes; OPENING / CLOSING for pairs.
QUOTE_CHARS = "\"'“”‘’「」『』《》"
OPENING_QUOTES = "\"'“‘「『《"
CLOSING_QUOTES = "\"'”’」』》"

# A bracketed aside, ASCII or full-width brackets, innermost: "(film)", "（简称LCA）".
BRACKETED = r"[(（][^()（）]*[)）]"

# English personal pronouns (a question or sentence that refers back with them) and the
# demonstratives that point back as well.
PERSONAL_PRONOUNS_EN: tuple[str, ...] = ("he", "she", "it", "they", "him", "her", "his", "its", "them", "their")
DEMONSTRATIVES_EN: tuple[str, ...] = ("this", "that", "these", "those")

# Chinese words that ask when (each reader adds the words of its own purpose).
WHEN_WORDS_ZH: tuple[str, ...] = ("什么时候", "何时", "哪一天", "哪天", "几号", "日期", "截止")


def words_pattern(words: tuple[str, ...]) -> str:
    """An alternation of whole English words, longest first (use with re.IGNORECASE)."""
    return r"\b(?:" + "|".join(sorted(words, key=len, reverse=True)) + r")\b"


def alternatives(words: tuple[str, ...]) -> str:
    """An alternation of literal strings, longest first (Chinese: no word edges)."""
    return "(?:" + "|".join(sorted(words, key=len, reverse=True)) + ")"
