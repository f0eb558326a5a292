"""``text.normalize.fold_marks`` (the reader's normal form) equals its plain definition — NFKC, case fold,
NFKD, combining marks dropped, NFC — on every code point of the first three planes and on
random mixed strings; the fast paths (ASCII, one ``str.translate``) change speed only. The same
for ``inflection_found`` (a word or an inflection of it), whose spellings are computed once per word."""

from __future__ import annotations

import random
import unicodedata

from kgrag.retrieve.word_forms import _INFLECTIONS, inflection_found
from kgrag.text.normalize import fold_marks


def reference(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    return unicodedata.normalize("NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch)))


def test_fold_equals_its_definition_on_every_code_point():
    for cp in range(0x30000):
        ch = chr(cp)
        assert fold_marks(ch) == reference(ch), hex(cp)


def test_fold_equals_its_definition_on_mixed_strings():
    rng = random.Random(0)
    pool = "aZ09 ,.-ÀéîõüÅçßſﬁ①ＡＢｃΣσςΩКиМоскваÅé\u0301e\u0301\u0308ǅǄ中文漢字がカタﾊﾟ한국어İıŉẞﬀⅣ"
    for _ in range(5000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 40)))
        assert fold_marks(text) == reference(text), text
    assert fold_marks("Akinoshū ÉCOLE") == "akinoshu ecole" and fold_marks("Plain ASCII") == "plain ascii"


def inflection_reference(word: str, seen: set[str]) -> bool:
    if word in seen:
        return True
    stems = {word} | {word[: -len(s)] for s in _INFLECTIONS if word.endswith(s) and len(word) - len(s) >= 3}
    if word.endswith(("ies", "ied")):
        stems.add(word[:-3] + "y")
    for stem in stems:
        if stem in seen or any(stem + s in seen for s in _INFLECTIONS):
            return True
        if stem.endswith("y") and (stem[:-1] + "ies" in seen or stem[:-1] + "ied" in seen):
            return True
    return False


def test_inflection_found_equals_its_definition():
    rng = random.Random(0)
    stems = ["capital", "study", "stud", "film", "direct", "agenc", "play", "ies", "abcy", "tied", "run", "x"]
    vocabulary = sorted({stem + end for stem in stems for end in ("", *_INFLECTIONS, "ies", "ied", "ism", "y")}
                        | {stem[:-1] + end for stem in stems for end in ("ies", "ied")})
    for _ in range(5000):
        word = rng.choice(vocabulary)
        seen = set(rng.sample(vocabulary, rng.randint(0, 12)))
        assert inflection_found(word, seen) == inflection_reference(word, seen), (word, seen)
    assert inflection_found("capital", {"capitals"}) and inflection_found("study", {"studied"})
    assert not inflection_found("capital", {"capitalism"})
