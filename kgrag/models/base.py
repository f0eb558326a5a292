"""What the rest of kgrag may rely on from a model: one Protocol per kind.

Every implementation satisfies its protocol completely (``tests/test_model_protocols.py`` checks
the shipped ones), so callers read these fields directly instead of guessing with ``getattr``.
This module imports no model library: typing a parameter as ``Embedder`` costs nothing.
Each model module's error (``EmbedderError``, ``RerankerError``, ``NerError``) is a
``kgrag.errors.ModelError``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """A dense text embedder, loaded once per process; calls are thread-safe."""

    name: str  # what the configuration called it ("minilm", "e5", a model path)
    dim: int  # vector dimension
    # False for an English-only model: retrieval does not let it vote on questions written in
    # other scripts (MiniLM ranks Chinese passages near randomly; docs/decisions.md, "The routed
    # embedder").
    multilingual: bool
    max_tokens: int  # longest input (in count_tokens units) embedded without truncation or windows
    batch_size: int  # texts per model call

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (n, dim), L2-normalized rows, in input order."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Like ``embed_passages`` for search queries (models with roles embed them differently)."""
        ...

    def count_tokens(self, text: str) -> int:
        """Content tokens of ``text`` in the model's tokenizer (no special tokens, no prefix)."""
        ...


class SpaceQuery(NamedTuple):
    """One query vector of an embedder with several spaces, and how to read an index's score for
    it: ``score × scale + shift`` is the model's similarity (the index normalises the vector and
    the stored rows, so a vector that is not a plain unit query says how to undo that). A row
    the space does not hold scores ``outside`` exactly and is no hit of this space. ``rows``:
    only chunks written mainly outside the Latin script (True) or in it (False) are hits of this
    query (None: all). ``joins``: its hits and the previous query's make one list (one space read
    two ways, each for the rows it reads well). ``calibrated``: its similarities are on the scale
    the abstention gate's ``abstain_min_dense`` was measured on (the English model's; e5's cosines
    bunch in 0.7–0.9 whatever the text says and vouch for nothing)."""

    vector: np.ndarray
    scale: float = 1.0
    shift: float = 0.0
    outside: float = 0.0
    rows: bool | None = None
    joins: bool = False
    calibrated: bool = True


@runtime_checkable
class CorpusEmbedder(Embedder, Protocol):
    """An embedder whose vectors hold several models' spaces (``kgrag.models.routed``): a
    question may search more than one, and a corpus's language mix decides what a passage gets."""

    def embed_corpus(self, texts: Sequence[str], mixed: bool) -> np.ndarray:
        """``embed_passages`` for one ingestion job; ``mixed``: the job holds documents written
        mainly in non-Latin scripts next to Latin-script ones."""
        ...

    def query_vectors(self, question: str, held: Callable[..., bool] | None = None) -> list[SpaceQuery]:
        """One query per space the question searches, best-trusted first. ``held``:
        ``ChunkIndex.holds_dense_columns`` of the index searched; a space it does not hold is
        not embedded."""
        ...

    def lacks_multilingual_block(self, vectors: np.ndarray) -> np.ndarray:
        """Per stored row: whether it lacks the multilingual space (a Latin-script passage
        embedded while its corpus was not bilingual)."""
        ...

    def with_multilingual_block(self, texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
        """Stored rows of ``texts`` with the multilingual space added, the rest kept."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """A cross-encoder scoring (question, passage) pairs, loaded once; calls are thread-safe."""

    name: str  # shown in the query trace: "<loader>:<configured path>"
    batch_size: int  # pairs per forward pass
    # False for a model that reads English only (the one ``kgrag reranker train`` fits): it never
    # scores a question or chunk in another script (kgrag.retrieve.reranking).
    multilingual: bool

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One score per text, in input order; higher = more relevant to ``query``. Raw logits
        unless built with ``normalize=True``: comparable only within one model."""
        ...
