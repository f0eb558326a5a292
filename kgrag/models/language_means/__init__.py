"""The multilingual model's language offsets: the mean e5 passage vector of Latin-script text and
of mainly non-Latin (Chinese) text, fitted once on reference passages (``fit.py`` beside this
file writes ``multilingual-e5-small.json``).

multilingual-e5-small maps a question and a passage in one language closer together than the
same question and its answer in another: its cosines carry a language component. An English
question over a mixed knowledge base ranks nearly every English passage above the Chinese one
that answers it, and a Chinese question the reverse. Taking each language's mean out of both
sides (Libovický et al., 2020, "On the language neutrality of pre-trained multilingual
representations") leaves what the texts say. ``kgrag.models.routed`` does this inside one
stored vector (see ``ScriptRoutedEmbedder.query_vectors``).

The means are the model's, not a corpus's: a knowledge base whose Chinese half is about
railways and whose English half is about software would otherwise fold its topics into the
offset. The reference passages and the figures of the fit are in docs/decisions.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

E5_SMALL = Path(__file__).with_name("multilingual-e5-small.json")


@dataclass(frozen=True)
class LanguageMeans:
    """Mean L2-normalised passage vectors of one model: Latin-script and mainly non-Latin text."""

    latin: np.ndarray
    non_latin: np.ndarray

    def of(self, non_latin: bool) -> np.ndarray:
        return self.non_latin if non_latin else self.latin


@lru_cache(maxsize=4)
def load(path: Path = E5_SMALL) -> LanguageMeans:
    """The means written by ``fit.py``; a missing or malformed file is a packaging error."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    latin = np.asarray(data["latin"], dtype=np.float32)
    non_latin = np.asarray(data["non_latin"], dtype=np.float32)
    if latin.shape != non_latin.shape or latin.ndim != 1:
        raise ValueError(f"{path}: language means of shapes {latin.shape} and {non_latin.shape}")
    return LanguageMeans(latin, non_latin)
