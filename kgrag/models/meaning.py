"""How close two texts are in meaning, whatever their languages: the multilingual model's cosine
with each side's language mean taken out (``kgrag.models.language_means``).

The extractive answerer reads it to pick a sentence written in another language than the
question (words shared across Chinese and English are few: a number, a Latin name).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from kgrag.models.base import Embedder
from kgrag.models.language_means import LanguageMeans
from kgrag.text.scripts import is_mainly_non_latin

# Sentence vectors kept (~1.5 kB each): answers quote the same passages question after question,
# and e5 embeds ~60 sentences a second here.
CACHED_SENTENCES = 8192


class CrossLingualMeaning:
    """Language-neutral similarity from a multilingual embedder. ``model`` gives it when first
    needed (the routed embedder builds e5 on first use and keeps it)."""

    def __init__(self, model: Callable[[], Embedder], means: LanguageMeans):
        self._model = model
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()
        self.means = means

    @property
    def model(self) -> Embedder:
        return self._model()

    def similarities(self, question: str, texts: Sequence[str]) -> np.ndarray:
        """``(q − m_q)·(p − m_p) + q·m_q`` for each text p (a passage of the question): ranks texts
        of both languages on one scale, where the question's cosine with its own language's
        texts would sit on average, as the dense path reads its e5 scores."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        q = self.model.embed_queries([question])[0]
        passages = self._passages(list(texts))
        mine = self.means.of(is_mainly_non_latin(question))
        theirs = np.stack([self.means.of(is_mainly_non_latin(t)) for t in texts])
        return (passages - theirs) @ (q - mine) + float(q @ mine)

    def _passages(self, texts: list[str]) -> np.ndarray:
        """``embed_passages`` of ``texts``, each text embedded once (``CACHED_SENTENCES``)."""
        found: dict[str, np.ndarray] = {}
        with self._cache_lock:
            for text in texts:
                if text in self._cache:
                    self._cache.move_to_end(text)
                    found[text] = self._cache[text]
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            found.update(zip(missing, self.model.embed_passages(missing), strict=True))
            with self._cache_lock:
                for text in missing:
                    self._cache[text] = found[text]
                while len(self._cache) > CACHED_SENTENCES:
                    self._cache.popitem(last=False)
        return np.stack([found[t] for t in texts])
