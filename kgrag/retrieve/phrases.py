"""Quoted phrases: what a question puts in quotes is text the answer's passage holds verbatim.

A user who quotes ('Ensure compliance', "Convention over Configuration", `gitlab.rb`, 「最近公共祖先」)
names the exact words of a passage; BM25 over the question scores those words one by one, among
all the others. The keyword path therefore ranks the passages holding a quoted phrase verbatim
(case and spacing aside) above those that only share its words, as a search engine's phrase
boost does (Elasticsearch ``match_phrase``).
"""

from __future__ import annotations

import re

# A quote opens after the start, a space or a bracket and closes before a space, punctuation or
# the end, so the apostrophes of "GitLab's" and "don't" never pair up.
_PAIRS = (
    r"(?:^|(?<=[\s(\[]))'([^'\n]{2,80}?)'(?=[\s.,;:!?)\]]|$)",
    r"(?:^|(?<=[\s(\[]))\"([^\"\n]{2,80}?)\"(?=[\s.,;:!?)\]]|$)",
    r"‘([^’\n]{2,80})’",
    r"“([^”\n]{2,80})”",
    r"`([^`\n]{2,80})`",
    r"「([^」\n]{1,80})」",
    r"『([^』\n]{1,80})』",
    r"《([^》\n]{1,80})》",
)
_QUOTED = re.compile("|".join(_PAIRS))
_SPACE = re.compile(r"\s+")


def quoted_phrases(question: str) -> list[str]:
    """The phrases the question quotes, in order, each once (normalized by ``phrase_key``)."""
    found = [next(g for g in m.groups() if g is not None).strip() for m in _QUOTED.finditer(question)]
    return list(dict.fromkeys(p for p in (phrase_key(f) for f in found) if len(p) >= 2))


def phrase_key(text: str) -> str:
    """Case-folded with runs of white space as one space: how a phrase and a passage compare."""
    return _SPACE.sub(" ", text.casefold()).strip()


def telling(phrase: str) -> bool:
    """Whether holding the phrase says more than BM25 over its words: two words or more (their
    order and adjacency), or a code-like or CJK token ('#ciso', 'gitlab.rb', 'snake_case',
    '红楼梦'), which the analyzer splits. A single plain word is one more BM25 term, nothing else."""
    return " " in phrase or not (phrase.isascii() and phrase.isalnum())


def holds(text: str, phrase: str) -> bool:
    """Whether ``text`` holds ``phrase`` verbatim (``phrase_key``), not inside a longer Latin word
    ("aware" is not held by "awareness"; Chinese has no word edges to keep)."""
    start = r"(?<!\w)" if _LATIN_WORD.match(phrase[:1]) else ""
    end = r"(?!\w)" if _LATIN_WORD.match(phrase[-1:]) else ""
    return re.search(start + re.escape(phrase) + end, phrase_key(text)) is not None


_LATIN_WORD = re.compile(r"[0-9a-zà-ÿ]")
