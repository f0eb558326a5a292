"""Named-entity recognition without an LLM: spaCy for English, jieba part-of-speech tags for
Chinese.

English uses the small spaCy pipeline with only its ``ner`` component loaded: in
``en_core_web_sm`` the NER has its own embedded tok2vec (it does not listen to the shared
``tok2vec``), so tagger, parser, lemmatizer and the shared tok2vec are excluded, which is what
makes it fast enough to run on every chunk. Numeric labels (dates, amounts, ordinals) are
dropped: they are not things a question is about and would make hubs in the graph.

Chinese has no NER model on PyPI; ``jieba.posseg`` tags proper nouns (nr person, ns place,
nt organisation, nz other proper noun), which is the usual offline substitute, filtered to the
candidates that carry meaning (``kgrag.models.zh_entities``). It runs only on Han runs of texts
that contain Han (``kgrag.text.scripts``). The alias gazetteer
(``kgrag.lexicon.gazetteer``) adds and corrects names on top of both.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import threading
import time
import weakref
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from kgrag.config import ExtractionSettings
from kgrag.errors import ModelError
from kgrag.lexicon.titles import LEADING_ARTICLE
from kgrag.models.zh_entities import chinese_entities
from kgrag.text.scripts import NER_MASKED_RUN, has_han, has_latin_capital

# Labels of en_core_web_sm kept as entities; DATE, TIME, PERCENT, MONEY, QUANTITY, ORDINAL and
# CARDINAL are left out.
KEPT_LABELS = frozenset(
    {"PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE"}
)

_TRAILING_POSSESSIVE = re.compile(r"(?:['’]s|['’])$")
# "." is not trimmed: it ends abbreviations that are part of the name ("U.S.", "Inc.").
_EDGE_PUNCT = " \t\n\r\"“”‘’'()[]{}<>,;:!?-–—"


@dataclass(frozen=True)
class Span:
    text: str
    type: str
    start: int  # character offsets into the recognized text
    end: int


class NerError(ModelError):
    """The NER model could not be loaded."""


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Drop a leading article, a trailing possessive and edge punctuation from text[start:end]."""
    while True:
        before = (start, end)
        surface = text[start:end]
        m = LEADING_ARTICLE.match(surface)
        if m:
            start += m.end()
        m = _TRAILING_POSSESSIVE.search(text[start:end])
        if m:
            end = start + m.start()
        while start < end and text[start] in _EDGE_PUNCT:
            start += 1
        while end > start and text[end - 1] in _EDGE_PUNCT:
            end -= 1
        if (start, end) == before:
            return start, end


def _mask_cjk(text: str) -> str:
    """Replace each CJK run by a comma and spaces (same length, so offsets hold).

    The English model glues Latin names to adjacent Chinese ("2008年，Michael" is one token) and
    reads a bare space as no boundary at all ("Bill Gates和Paul Allen" → one name); a comma
    separates names the way the Chinese text did (measured: Gates/Allen, Apple/Google split).
    """
    if not has_han(text):
        return text
    return NER_MASKED_RUN.sub(lambda m: "," + " " * (m.end() - m.start() - 1), text)


def _keep(surface: str) -> bool:
    # One-character names ("X", "张") and bare numbers are noise, not entities.
    return len(surface) >= 2 and not surface.replace(" ", "").isdigit()


# A call with fewer texts than this stays in-process: shipping it to a worker costs more.
MIN_TEXTS_PER_WORKER = 32


class EntityRecognizer:
    """Batched NER over chunk texts. Thread-safe (one lock per model).

    spaCy holds the GIL while it parses, so threads do not help; ``processes > 1`` starts that
    many - 1 worker processes (spawned once, on the first large call, each loading its own
    model) and splits every large call between them and this process.
    """

    def __init__(self, settings: ExtractionSettings, batch_size: int = 128, processes: int = 1):
        self.batch_size = batch_size
        self.settings = settings
        self.processes = max(1, processes)
        self._nlp = self._load_spacy(settings.spacy_model) if settings.use_ner else None
        self._use_jieba = settings.use_jieba
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def close(self) -> None:
        """Stop the worker processes, if any were started."""
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None

    def _workers(self) -> ProcessPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                # spawn, not fork: the parent may hold torch/OpenMP threads, which fork breaks.
                self._pool = ProcessPoolExecutor(
                    max_workers=self.processes - 1,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_init_worker,
                    initargs=(self.settings.model_dump(), self.batch_size, os.getpid()),
                )
                weakref.finalize(self, self._pool.shutdown, wait=False, cancel_futures=True)
            return self._pool

    @staticmethod
    def _load_spacy(model: str):
        import spacy

        try:
            probe = spacy.load(model, exclude=["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "senter"])
        except OSError as e:
            raise NerError(f"spaCy model {model!r} is not installed (pip install it; it is never downloaded): {e}") from e
        if "ner" not in probe.pipe_names:
            raise NerError(f"spaCy model {model!r} has no 'ner' component (pipes: {probe.pipe_names})")
        ner_tok2vec = probe.config["components"]["ner"]["model"].get("tok2vec", {})
        if "Listener" in str(ner_tok2vec.get("@architectures", "")):
            # A pipeline whose NER listens to a shared tok2vec needs that component too.
            probe = spacy.load(model, exclude=["tagger", "parser", "attribute_ruler", "lemmatizer", "senter"])
        return probe

    def recognize(self, texts: Sequence[str]) -> list[list[Span]]:
        """Entity spans per text, sorted by start offset."""
        parts = min(self.processes, len(texts) // MIN_TEXTS_PER_WORKER)
        if parts <= 1:
            return self._recognize_here(texts)
        size = -(-len(texts) // parts)
        slices = [list(texts[i : i + size]) for i in range(0, len(texts), size)]
        pool = self._workers()
        futures = [pool.submit(_recognize_in_worker, part) for part in slices[1:]]
        results = self._recognize_here(slices[0])
        for future in futures:
            results.extend(future.result())
        return results

    def _recognize_here(self, texts: Sequence[str]) -> list[list[Span]]:
        results: list[list[Span]] = [[] for _ in texts]
        if self._nlp is not None:
            # An English name needs a capital letter; texts without one skip spaCy entirely.
            english = [i for i, t in enumerate(texts) if has_latin_capital(t)]
            with self._lock:
                docs = self._nlp.pipe((_mask_cjk(texts[i]) for i in english), batch_size=self.batch_size)
                for i, doc in zip(english, docs, strict=True):
                    results[i].extend(self._spacy_spans(texts[i], doc))
        if self._use_jieba:
            for i, text in enumerate(texts):
                if has_han(text):
                    results[i].extend(self._jieba_spans(text))
        for spans in results:
            spans.sort(key=lambda s: (s.start, -s.end))
        return results

    @staticmethod
    def _spacy_spans(text: str, doc) -> list[Span]:
        spans = []
        for ent in doc.ents:
            if ent.label_ not in KEPT_LABELS:
                continue
            start, end = _trim(text, ent.start_char, ent.end_char)
            surface = text[start:end]
            # The English model reads CJK characters as opaque tokens; its spans there are noise.
            if _keep(surface) and not has_han(surface):
                spans.append(Span(surface, ent.label_, start, end))
        return spans

    @staticmethod
    def _jieba_spans(text: str) -> list[Span]:
        return [Span(*entity) for entity in chinese_entities(text, _posseg())]


_worker_recognizer: EntityRecognizer | None = None


# How often a worker checks that the process that started it is still alive.
PARENT_POLL_S = 1.0


def _init_worker(settings: dict, batch_size: int, parent_pid: int) -> None:
    global _worker_recognizer
    threading.Thread(target=_exit_when_orphaned, args=(parent_pid,), name="kgrag-ner-parent-watch", daemon=True).start()
    _worker_recognizer = EntityRecognizer(ExtractionSettings(**settings), batch_size=batch_size)


def _exit_when_orphaned(parent_pid: int) -> None:
    """End this worker once its parent is gone (its parent pid changes when it is re-parented).

    A parent killed without cleanup (SIGTERM/SIGKILL of ``kgrag ingest``) never shuts the pool
    down, and its workers would wait for work forever (such orphans were found still using CPU
    an hour later). Polling works on every platform, unlike Linux's PR_SET_PDEATHSIG.
    """
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_S)
    os._exit(0)


def _recognize_in_worker(texts: list[str]) -> list[list[Span]]:
    assert _worker_recognizer is not None, "worker initializer did not run"
    return _worker_recognizer._recognize_here(texts)


_posseg_lock = threading.Lock()
_posseg_module = None


def _posseg():
    """jieba.posseg, initialized once (jieba builds its prefix dictionary on first use, ~1 s)."""
    global _posseg_module
    if _posseg_module is None:
        with _posseg_lock:
            if _posseg_module is None:
                import jieba
                import jieba.posseg

                jieba.setLogLevel(60)
                jieba.initialize()
                _posseg_module = jieba.posseg
    return _posseg_module
