"""Signals for a question answered from text in another script (an English question, a Chinese
passage, or the reverse), read by the abstention gate (``kgrag.retrieve.abstain``).

Words do not cross scripts: "How long is the Guangzhou–Maoming railway?" shares no word with
"广茂铁路……全长364.6公里", so the gate's word signals (coverage, a name of the question missing
from every top hit) would refuse every such question. Two signals stand in for them:

- ``across``: the best hit is written in another script than the question, so its words say
  nothing; only the dense path's language-neutral similarity can vouch for it.
- ``NameTies``: a name of the question is *tied* to a hit written in another script when the
  graph knows the name in the hit's script (an entity linked from the name has an alias there —
  "LCA" / "最近公共祖先" — that the hit writes), or when the name is the hit's Chinese written in
  pinyin (``transliterated``: "Guangzhou–Maoming" and a passage naming 广州 and 茂名). A tied
  name is not missing from the hits. The embedder offers no ties: multilingual-e5-small puts
  "Trans-Siberian" as near a page on another railway as "Guangzhou–Maoming" is to its own page
  (docs/decisions.md, "Questions across languages").

Both are plain values a fitted gate can read as features; the retrieval pipeline computes the
ties (it holds the graph) and hands them to the gate with the hits.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from kgrag.retrieve.types import Hit, LinkedEntity, NameTies
from kgrag.stores.base import GraphReader
from kgrag.text.normalize import fold_marks as fold
from kgrag.text.scripts import HAN_RUN, is_mainly_non_latin

_LATIN_LETTERS = re.compile(r"[a-z]+")
_MAX_SYLLABLES = 4  # a name word spells at most this many syllables of the hit


def hit_script(hit: Hit) -> bool:
    """Whether the hit is written mainly outside the Latin script (its chunk's text)."""
    return is_mainly_non_latin(hit.chunk.text)


def across(question: str, hit: Hit) -> bool:
    """The hit is written in another script than the question (mainly non-Latin or not)."""
    return is_mainly_non_latin(question) != hit_script(hit)


def tie_names(names: Sequence[str], hits: Sequence[Hit], linked: Sequence[LinkedEntity], graph: GraphReader) -> NameTies:
    """The ties of ``names`` to the ``hits`` written in another script than each name; a name
    inside a tied one is tied where it is."""
    by_name: dict[str, frozenset[str]] = {}
    how: dict[str, str] = {}
    scripts = {h.chunk.id: hit_script(h) for h in hits}
    folded: dict[str, str] = {}  # chunk id → its text folded, read once whatever the names

    def text_of(hit: Hit) -> str:
        if hit.chunk.id not in folded:
            folded[hit.chunk.id] = _folded(hit)
        return folded[hit.chunk.id]

    for name in sorted(dict.fromkeys(names), key=len, reverse=True):  # "Jared Allen" before "Jared"
        within = [n for n in by_name if fold(name) in fold(n)]
        if within:
            by_name[name], how[name] = frozenset().union(*(by_name[n] for n in within)), how[within[0]]
            continue
        script = is_mainly_non_latin(name)
        others = [h for h in hits if scripts[h.chunk.id] != script]
        if not others:
            continue
        forms = _other_script_names(name, script, linked, graph)
        tied = {h.chunk.id for h in others if any(f in text_of(h) for f in forms)}
        spelled = set() if tied or script else {h.chunk.id for h in others if transliterated(name, text_of(h))}
        if tied:
            by_name[name], how[name] = frozenset(tied), "graph"
        elif spelled:
            by_name[name], how[name] = frozenset(spelled), "transliteration"
    return NameTies(by_name, how)


def lead_with_tied(hits: list[Hit], ties: NameTies, depth: int) -> list[Hit]:
    """``hits`` led by the first of the first ``depth`` that every tied name is tied to, when the
    first is tied to none of them: "Who is Zhao Peng?" over Chinese pages of footballers is about
    赵鹏's page (its name spelled in pinyin), not 邹游's that the dense path liked better. The
    others keep their order."""
    if not ties.by_name or not hits:
        return hits
    tied = [h for h in hits[:depth] if all(h.chunk.id in ids for ids in ties.by_name.values())]
    if not tied or any(hits[0].chunk.id in ids for ids in ties.by_name.values()):
        return hits
    return [tied[0], *(h for h in hits if h is not tied[0])]


def _other_script_names(name: str, script: bool, linked: Sequence[LinkedEntity], graph: GraphReader) -> list[str]:
    """Folded names, in the other script, of the entities linked from ``name``."""
    forms: list[str] = []
    for le in linked:
        if fold(le.surface) != fold(name):
            continue
        entity = graph.get_entity(le.key)
        if entity is None:
            continue
        forms += [fold(f) for f in [entity.name, *entity.aliases] if f.strip() and is_mainly_non_latin(f) != script]
    return list(dict.fromkeys(forms))


def _folded(hit: Hit) -> str:
    text = f"{hit.chunk.headed_text}\n{hit.parent.text}" if hit.parent else hit.chunk.headed_text
    return fold(text)


def transliterated(name: str, text: str) -> bool:
    """Whether the Latin-script ``name`` spells Chinese that ``text`` writes, in toneless pinyin:
    each of its words of three letters or more is the pinyin of consecutive characters of
    ``text`` ("Guangzhou" 广州, "Maoming" 茂名), and together they spell two syllables or more
    (a lone "Shi" matches too much to tell anything)."""
    words = [w for w in _LATIN_LETTERS.findall(fold(name)) if len(w) >= 3]
    if not words:
        return False
    spelled = _pinyin_windows(text)
    lengths = [spelled.get(w, 0) for w in words]
    return all(lengths) and sum(lengths) >= 2


@functools.lru_cache(maxsize=1024)
def _pinyin_windows(text: str) -> dict[str, int]:
    """Toneless pinyin of each run of 1..``_MAX_SYLLABLES`` consecutive Han characters of
    ``text`` → the fewest syllables spelling it."""
    from pypinyin import lazy_pinyin

    out: dict[str, int] = {}
    for run in HAN_RUN.finditer(text):
        syllables = lazy_pinyin(run.group())
        for n in range(_MAX_SYLLABLES, 0, -1):
            for i in range(len(syllables) - n + 1):
                out["".join(syllables[i : i + n])] = n
    return out


def spells_pinyin(name: str) -> bool:
    """Whether each word of the Latin-script ``name`` is toneless pinyin, at most
    ``_MAX_SYLLABLES`` syllables ("Yu Le", "Maoming"; not "Portugal"): the name of a Chinese thing,
    whose page would be tied to it were it among the hits."""
    words = _LATIN_LETTERS.findall(fold(name))
    return bool(words) and all(_syllables(w) <= _MAX_SYLLABLES for w in words)


@functools.lru_cache(maxsize=4096)
def _syllables(word: str) -> int:
    """The fewest toneless pinyin syllables spelling ``word`` (more than ``_MAX_SYLLABLES``
    when none do)."""
    known, longest = _toneless_syllables()
    best = [0] + [_MAX_SYLLABLES + 1] * len(word)
    for end in range(1, len(word) + 1):
        for start in range(max(0, end - longest), end):
            if word[start:end] in known:
                best[end] = min(best[end], best[start] + 1)
    return best[len(word)]


@functools.lru_cache(maxsize=1)
def _toneless_syllables() -> tuple[frozenset[str], int]:
    """Every toneless pinyin syllable, and the longest one's length."""
    from pypinyin.constants import PINYIN_DICT

    known = frozenset(fold(s) for readings in PINYIN_DICT.values() for s in readings.split(","))
    return known, max(map(len, known))


def pinyin_of(han: str) -> str:
    """Toneless pinyin of ``han``, syllables run together ("广州" → "guangzhou")."""
    from pypinyin import lazy_pinyin

    return "".join(lazy_pinyin(han))
