"""``wording.fold`` (the reader's normal form) equals its plain definition — NFKC, case fold,
NFKD, combining marks dropped, NFC — on every code point of the first three planes and on
random mixed strings; the fast paths (ASCII, one ``str.translate``) change speed only."""

from __future__ import annotations

import random
import unicodedata

from kgrag.retrieve.wording import fold


def reference(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    return unicodedata.normalize("NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch)))


def test_fold_equals_its_definition_on_every_code_point():
    for cp in range(0x30000):
        ch = chr(cp)
        assert fold(ch) == reference(ch), hex(cp)


def test_fold_equals_its_definition_on_mixed_strings():
    rng = random.Random(0)
    pool = "aZ09 ,.-ÀéîõüÅçßſﬁ①ＡＢｃΣσςΩКиМоскваÅé\u0301e\u0301\u0308ǅǄ中文漢字がカタﾊﾟ한국어İıŉẞﬀⅣ"
    for _ in range(5000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 40)))
        assert fold(text) == reference(text), text
    assert fold("Akinoshū ÉCOLE") == "akinoshu ecole" and fold("Plain ASCII") == "plain ascii"
