"""BM25 analysis shared by every chunk index: the same terms at index and query time.

English: case fold, NFKC, Snowball (Porter2) stemming, stop words dropped. Chinese: jieba
segmentation (search mode is not used: overlapping sub-words inflate term frequencies), single
characters kept so short names still match; traditional characters are simplified first
(OpenCC t2s), so 資料庫 and 资料库 are one term. Mixed text is split into script runs first (Han
runs, ``kgrag.text.scripts``).
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import snowballstemmer

from kgrag.text.normalize import fold, to_simplified
from kgrag.text.scripts import han_runs

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

EN_STOP = frozenset(
    """a an and are as at be but by for if in into is it its of on or such that the their then
    there these they this to was were will with from has have had he she his her i we you your
    our not no do does did so than too very can who whom which what when where why how all any
    been being also which about after before over under between out up down off more most other
    some only own same just s t""".split()
)
ZH_STOP = frozenset("的 了 是 在 和 与 及 或 也 就 都 而 被 把 之 其 这 那 个 为 以 于 上 下 中 对 等 吗 呢 吧 啊 么 什么 哪 哪个 怎么 多少 谁".split())

_jieba_lock = threading.Lock()
_jieba_ready = False


def jieba():
    """jieba, initialised once (thread-safe), its log quiet."""
    return _ready_jieba()


def _ready_jieba():
    global _jieba_ready
    import jieba

    if not _jieba_ready:
        with _jieba_lock:
            if not _jieba_ready:
                jieba.setLogLevel(60)
                jieba.initialize()
                _jieba_ready = True
    return jieba


def posseg():
    """jieba's part-of-speech tagger (``posseg().lcut(text)`` → ``[(word, flag), ...]``)."""
    import jieba.posseg as tagger

    _ready_jieba()
    return tagger


_stemmer_local = threading.local()


def _stem(word: str) -> str:
    st = getattr(_stemmer_local, "s", None)
    if st is None:
        st = _stemmer_local.s = snowballstemmer.stemmer("english")
    return st.stemWord(word)


@lru_cache(maxsize=100_000)
def _stem_cached(word: str) -> str:
    return _stem(word)


def analyze(text: str) -> list[str]:
    """Terms for BM25, in order (duplicates kept: term frequency matters)."""
    text = to_simplified(fold(text))
    out: list[str] = []
    pos = 0
    for m in han_runs(text):
        _analyze_latin(text[pos : m.start()], out)
        for w in jieba().cut(m.group(), HMM=True):
            if w not in ZH_STOP:
                out.append(w)
        pos = m.end()
    _analyze_latin(text[pos:], out)
    return out


def _analyze_latin(text: str, out: list[str]) -> None:
    for w in _WORD.findall(text):
        if w in EN_STOP:
            continue
        out.append(_stem_cached(w) if w.isascii() and w.isalpha() else w)


def segment(text: str) -> str:
    """Analyzed terms joined by spaces: what an index with a whitespace tokenizer stores."""
    return " ".join(analyze(text))
