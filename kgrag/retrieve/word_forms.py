"""How the abstention gate and the graph walk read words: a question's content words, names and
asked-for nouns, and a hit's text in one normal form (NFKC, case fold, Latin diacritics off),
where a word is found as itself or an inflection of it, never as a longer derived word
("capital" finds "capitals", not "Capitalisme"). The gate's decisions live in ``abstain.py``;
the walk reads ``content_words`` and ``held_share`` (``paths.py``)."""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Sequence

from kgrag.lexicon.countries import is_demonym
from kgrag.retrieve.tuning import LINKING
from kgrag.retrieve.types import Hit, LinkedEntity
from kgrag.text.analyze import EN_STOP, ZH_STOP, analyze, jieba, posseg
from kgrag.text.normalize import fold_marks
from kgrag.text.patterns import WHEN_WORDS_ZH, alternatives
from kgrag.text.scripts import HAN_RUN, han_runs, has_han

# Chinese interrogatives and particles: a question has them, its answer passage does not
# ("王沈是哪里人？" → 哪里), so they do not count against coverage (docs/decisions.md, "What the
# gate counts as a question's words").
QUESTION_WORDS = frozenset(
    "哪里 哪儿 如何 为什么 为何 什么样 什么时候 何时 何地 何人 哪些 哪一个 哪位 哪年 几 几个 多久 多长 "
    "是否 有没有 是不是 呀 啦 吗 呢 么 多少 怎么 怎样 怎么样 哪 哪个 谁 什么 请问 一下".split()
)
# The words of a question asking when that say when, or how the answer stands to the day asked
# ("What is the date of the next Boston coworking?"): the passage states a rule or a date, seldom
# "next" or "date". Like a Chinese question's asked-for nouns, they count for coverage when
# found and are not missed when absent (``when_words``). "The last Republican elected" asks no
# date: its "last" is missed as before (docs/decisions.md, "What the gate counts as a question's
# words").
# In Chinese also the edge of a period asked for: "当前这个季度什么时候结束？" is answered by
# "第四季度：11月1日至1月31日", which says neither 当前 nor 结束.
_WHEN_WORDS = frozenset("date dates day days time times next last previous current currently upcoming today "
                        "latest recent "
                        "日期 时间 时候 哪天 几号 当前 目前 现在 今天 下次 上次 这次 本次 最近 本月 上个月 下个月 "
                        "开始 结束 截止".split())
_ASKS_WHEN = re.compile(r"^\W*(?:until |by |since )?when\b|\b(?:date|deadline|day)\b"
                        rf"|{alternatives(WHEN_WORDS_ZH)}|几月几[日号]|什么日子", re.I)
LATIN_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CAPITALISED = re.compile(r"(?<![.?!]\s)(?<!^)\b[A-Z][\w'-]*[a-z0-9]\w*")
# A multi-word name as written: capitalised words, joined by the lower-case particles of names
# ("Marie Louise of Hesse-Kassel", "Lord Patrick Crichton-Stuart"). Its words must stand in one
# hit together: pages that name "Marie" here and "Hesse-Kassel" there are about someone else.
_PHRASE = re.compile(r"(?<![.?!]\s)(?<!^)\b[A-Z][\w'.-]*(?:\s+(?:(?:of|the|de|von|van|der|du|la|le|y)\s+)*[A-Z][\w'.-]*)+")
# An abbreviation in a name ("US Presidents", "U.S. Navy", "UK"): passages often spell it out
# ("President of the United States"), so it is found as itself or as the initials of a run of
# capitalised words.
_ABBREVIATION = re.compile(r"\b(?:[A-Z]\.){2,}|\b[A-Z]{2,5}\b")
_CAPITALISED_RUN = re.compile(r"[A-Z][\w'-]*(?:\s+(?:(?:of|the|and|for|de)\s+)*[A-Z][\w'-]*)+")
_INFLECTIONS = ("s", "es", "ed", "d", "ing")
# jieba parts of speech of words that ask or link rather than name (pronouns, prepositions,
# conjunctions, particles, adverbs, numerals and measure words, interjections).
_FUNCTION_POS = frozenset("r rr rz ry p c cc u uj ul uz ug uv ud y e o d m mq q".split())
_PROPER_POS = frozenset("nr nrfg nrt ns nt nz".split())  # jieba's person, place, organisation, other names
_KIND_INTERROGATIVES = frozenset("谁 怎样 怎么样 何种".split())
# Verbs that link a Chinese question's subject to its interrogative ("职业是什么", "籍贯在哪").
_COPULAS = frozenset("是 在 为 叫 叫做 称为 有 属于 位于".split())
_POSSESSIVE = re.compile(r"['’]s?$")


def question_names(question: str, linked: Sequence[LinkedEntity]) -> list[str]:
    """Surfaces that name what the question is about: exactly linked entities as written, and
    English words with a capital inside the sentence ("What is the capital of Australia?" →
    Australia), except nationality adjectives ("American", "French": the answer passage often
    says "United States" or names a city instead)."""
    cuts = _word_boundaries(question)
    names = [le.surface for le in linked if le.method == "exact" and le.surface.strip() and _whole_words(
        question, le.surface, cuts) and not is_nationality(le.surface)]
    covered = " ".join(names).casefold()
    # A Latin name ends where Chinese begins: "Apple Lossless是哪个公司的…" names "Lossless", not the
    # whole clause (docs/decisions.md, "What the gate counts as a question's words").
    latin = HAN_RUN.sub(" ", question)
    for m in _CAPITALISED.finditer(latin):
        word = _POSSESSIVE.sub("", m.group())
        folded = word.casefold()
        if folded in EN_STOP or folded in covered or is_nationality(word):
            continue
        names.append(word)
    names.extend(_phrases(latin))
    return list(dict.fromkeys(names))


def is_nationality(word: str) -> bool:
    """"American", "Australian", "Chinese", "French", "Bulgarian-Canadian": a linked entity or a
    capitalised word of this form is an adjective here (the answer passage says "United States"
    or names a city)."""
    word = word.strip()
    return bool(word) and " " not in word and all(is_demonym(part) for part in word.split("-"))


def _phrases(question: str) -> list[str]:
    """Multi-word capitalised names of an English question, possessive dropped."""
    out = []
    for m in _PHRASE.finditer(question):
        words = _POSSESSIVE.sub("", m.group().rstrip(".")).split()
        while words and is_nationality(words[-1]):
            words.pop()  # "Neil Jordan American": the nationality is no part of the name
        phrase = " ".join(words)
        if len([w for w in word_forms(phrase) if w not in EN_STOP]) >= 2:
            out.append(phrase)
    return out


def _word_boundaries(question: str) -> set[int]:
    """Offsets where jieba puts a word boundary in the question's Chinese text (and every offset
    of other text): a linked Chinese surface that starts or ends inside a word is a substring
    match, not a name ("候传" in "什么时候传入")."""
    if not has_han(question):
        return set(range(len(question) + 1))
    cuts = {0, len(question)}
    for _word, start, end in jieba().tokenize(question):
        cuts.update((start, end))
    return cuts


def _whole_words(question: str, surface: str, cuts: set[int]) -> bool:
    start = question.find(surface)
    return start < 0 or not has_han(surface) or (start in cuts and start + len(surface) in cuts)


def word_coverage(question: str, read: Sequence[HitText]) -> float:
    """Share of the question's content words found in any of the hits read: an English word
    as itself or an inflection of it, a Chinese word as a substring (jieba may cut the passage
    differently from the question). A Chinese question's asked-for nouns (``asked_nouns``) count
    when found and are not missed when absent: the passage states the answer, not always the
    kind of answer it is ("足球运动员" for "职业"); so do the ``when_words`` of a question asking when."""
    wanted = content_words(question)
    found = {w for w in wanted if any(r.has(w) for r in read)}
    wanted -= (asked_nouns(question) | when_words(question, wanted)) - found
    if not wanted:
        return 0.0
    return len(found) / len(wanted)


def asks_when(question: str) -> bool:
    """Whether a question asks when: "When …?", "the date / deadline / day …", "什么时候",
    "哪天", "截止日期"."""
    return _ASKS_WHEN.search(question) is not None


def when_words(question: str, words: set[str]) -> set[str]:
    """Those of ``words`` that only say when, if the question asks when (``_WHEN_WORDS``)."""
    return words & _WHEN_WORDS if asks_when(question) else set()


def asked_nouns(question: str) -> set[str]:
    """The nouns of a Chinese question that name the kind of answer it asks for, not what it is
    about: the nouns right after an interrogative ("什么职业", "哪几个站点", "什么时候") or, in
    "X的Y是什么" / "X的Y在哪", the nouns between the "的" and the interrogative ("籍贯"). The
    passage that answers says "足球运动员", not "职业". Proper nouns (nr/ns/nt/nz) are never
    asked-for words (docs/decisions.md, "What the gate counts as a question's words")."""
    if not has_han(question):
        return set()
    tokens = [(w, flag) for m in han_runs(fold_marks(question)) for w, flag in posseg().lcut(m.group())]
    asked: set[str] = set()
    for i, (word, _flag) in enumerate(tokens):
        if not _interrogative(word):
            continue
        after = _noun_run(tokens[i + 1:])
        if after:
            asked.update(after)
            continue
        j = i - 1
        while j >= 0 and tokens[j][0] in _COPULAS:
            j -= 1
        before = _noun_run(tokens[:j + 1][::-1], proper=True)  # the "的" frames it: jieba tags 籍贯 nr
        if before and j - len(before) >= 0 and tokens[j - len(before)][0] == "的":
            asked.update(before)
    return asked


def _interrogative(word: str) -> bool:
    """An interrogative that asks *which kind*: "什么职业", "哪几个站点", "多少钱", "谁的儿子". Not the
    adverbial ones ("多久备份", "如何计算", "为什么"): the word after them is the verb asked about."""
    return word.startswith(("什么", "哪", "几", "多少")) or word in _KIND_INTERROGATIVES


def _noun_run(tokens: Sequence[tuple[str, str]], *, proper: bool = False) -> list[str]:
    """The common nouns (``proper``: any nouns) that open ``tokens`` (a "的" after an
    interrogative skipped: "谁的儿子")."""
    if tokens and tokens[0][0] == "的":
        tokens = tokens[1:]
    run = []
    for word, flag in tokens:
        if not flag.startswith("n") or (flag in _PROPER_POS and not proper) or word in QUESTION_WORDS:
            break
        run.append(word)
    return run


def held_share(words: set[str], text: str) -> float:
    """Share of ``words`` (``content_words`` of a question) that ``text`` holds, each as
    ``HitText.has`` finds it (an inflection of an English word, a Chinese word as a substring)."""
    if not words:
        return 0.0
    folded, seen = folded_words(text)
    return sum(1 for w in words if (w in folded if has_han(w) else inflection_found(w, seen))) / len(words)


@functools.lru_cache(maxsize=4096)
def folded_words(text: str) -> tuple[str, frozenset[str]]:
    """``text`` folded, and its Latin words. Kept for the last 4,096 texts (~40 MB at most): the
    graph path reads the same sections question after question and again in each iteration
    round — folding them was a tenth of its time at 100k passages (py-spy)."""
    folded = fold_marks(text)
    return folded, frozenset(LATIN_WORD.findall(HAN_RUN.sub(" ", folded)))


def content_words(text: str) -> set[str]:
    """The question's words that say what it is about: English words not stop words, Chinese
    words whose jieba part of speech is not a function word (pronoun, preposition, particle,
    adverb, numeral or measure word written in Han: "多久", "一次" ask, they do not name)."""
    words = {w for w in word_forms(text, han=False) if w not in EN_STOP}
    for m in han_runs(fold_marks(text)):
        words.update(w for w, flag in posseg().lcut(m.group()) if flag not in _FUNCTION_POS)
    return {w for w in words if w not in ZH_STOP and w not in QUESTION_WORDS}


class TextWords:
    """A text as the gate reads it: folded, with its Latin words."""

    def __init__(self, raw: str) -> None:
        self.text = fold_marks(raw)
        self.words = set(LATIN_WORD.findall(HAN_RUN.sub(" ", self.text)))

    def has(self, word: str) -> bool:
        if has_han(word):
            return word in self.text
        return inflection_found(word, self.words)

    def has_like(self, word: str) -> bool:
        """``has``, or a word one or two edits away ("Hawaiin" for "Hawaiian")."""
        if self.has(word):
            return True
        if has_han(word) or len(word) < LINKING.min_fuzzy_word:
            return False
        from rapidfuzz import fuzz, process

        return process.extractOne(word, self.words, scorer=fuzz.ratio, score_cutoff=LINKING.fuzzy_word_ratio) is not None


class HitText(TextWords):
    """One hit as the reader gets it (heading, chunk or parent text): folded text and words."""

    def __init__(self, hit: Hit) -> None:
        raw = f"{hit.chunk.headed_text}\n{hit.parent.text}" if hit.parent else hit.chunk.headed_text
        super().__init__(raw)
        self._raw = raw
        self._initials: list[str] | None = None

    def spells(self, abbreviation: str) -> bool:
        """``abbreviation`` ("US", "U.S.") as a word, or as the initials of capitalised words in
        a row ("United States", "Union of Soviet Socialist Republics")."""
        letters = abbreviation.replace(".", "").casefold()
        if letters in self.words or ("." in abbreviation and fold_marks(abbreviation) in self.text):
            return True
        if self._initials is None:
            self._initials = ["".join(w[0] for w in m.group().split() if w[0].isupper()).casefold()
                              for m in _CAPITALISED_RUN.finditer(self._raw)]
        return any(letters in run for run in self._initials)


def word_forms(text: str, *, han: bool = True) -> set[str]:
    """Case-folded word forms: Latin words as written (no stemming), Chinese as the BM25
    analyser segments it (jieba; ``han=False``: none)."""
    text = fold_marks(text)
    out = set(LATIN_WORD.findall(HAN_RUN.sub(" ", text)))
    if han:
        for m in han_runs(text):
            out.update(analyze(m.group()))
    return out


def inflection_found(word: str, seen: Collection[str]) -> bool:
    """``word`` or an inflection of it: capital/capitals, study/studied, not capital/capitalism."""
    forms = _inflected_forms(word)  # the word itself first
    if isinstance(seen, (set, frozenset)):
        return not seen.isdisjoint(forms)  # one C-level pass: the walk asks this per section read
    return any(form in seen for form in forms)


@functools.lru_cache(maxsize=65536)
def _inflected_forms(word: str) -> tuple[str, ...]:
    """Every spelling whose presence means ``word`` is found: each stem (the word, or the word
    less one inflection ending, ≥ 3 letters left; "-ies"/"-ied" → "-y"), the stem with each
    ending, and a "-y" stem's "-ies"/"-ied". Computed once per word: the graph path asks for the
    question's words in every section it reads."""
    stems = [word, *(word[: -len(s)] for s in _INFLECTIONS if word.endswith(s) and len(word) - len(s) >= 3)]
    if word.endswith(("ies", "ied")):
        stems.append(word[:-3] + "y")
    forms: list[str] = []
    for stem in stems:
        forms += [stem, *(stem + s for s in _INFLECTIONS)]
        if stem.endswith("y"):
            forms += [stem[:-1] + "ies", stem[:-1] + "ied"]
    return tuple(dict.fromkeys(forms))


def name_found(name: str, read: Sequence[HitText]) -> bool:
    """A name is found when one hit holds all of its words (a near spelling counts)."""
    folded = fold_marks(name)
    if any(folded in r.text for r in read):
        return True
    abbreviations = _ABBREVIATION.findall(name)
    words = [w for w in word_forms(_ABBREVIATION.sub(" ", name)) if w not in EN_STOP]
    if not words and not abbreviations:
        return True
    return any(all(r.has_like(w) for w in words) and all(r.spells(a) for a in abbreviations) for r in read)
