"""Cross-encoder rerankers (``kgrag.models.base.Reranker``): one loaded model scores
(question, passage) pairs.

Three loaders for one kind of model (a transformer with a one-logit classification head):

* ``OnnxReranker``: a directory ``kgrag reranker train`` wrote (``model.onnx`` beside the
  tokenizer and ``reranker.json``), run by ONNX Runtime: no torch, no transformers.

* ``FlagEmbeddingReranker``: FlagEmbedding's ``FlagReranker``, used for the encoder-only
  bge-reranker family (base, large, v2-m3), the loader those models are published for. It caps
  the question at 3/4 of ``max_length`` and truncates only the passage.
* ``CrossEncoderReranker``: sentence-transformers ``CrossEncoder`` for any other local
  cross-encoder directory.

Scores are the model's raw logits by default (``normalize=False``): unbounded, higher = more
relevant, comparable only within one model. ``retrieval.min_score`` is applied to exactly these
numbers, so a threshold tuned for one model means nothing for another; ``normalize=True`` maps
them through a sigmoid into (0, 1) (the same order). Both loaders give the same logits for pairs
under ``max_length`` tokens (they differ only in how they truncate longer ones).

Weights are never downloaded: the path must be a local directory. Both libraries are imported
on first load (FlagEmbedding takes ~5 s to import), so importing this module is cheap.

Thread safety: the Flask server scores from several threads sharing one model. Fast tokenizers
raise "Already borrowed" under concurrent use and one forward pass already uses every core, so
each reranker serializes its calls with a lock.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from kgrag.config import RetrievalSettings
from kgrag.errors import ModelError
from kgrag.models.base import Reranker

# Longer pairs are truncated (the passage side). 512 is what both the bge-rerankers and
# BERT-sized cross-encoders are trained with; chunks are far shorter.
DEFAULT_MAX_LENGTH = 512


class RerankerError(ModelError):
    """A reranker could not be built (missing or unusable model directory) or misbehaved."""


def _force_offline() -> None:
    # Must precede the first import of huggingface_hub / transformers, which read these once.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _model_dir(path: str | Path) -> Path:
    model_dir = Path(path).expanduser()
    if not model_dir.is_dir():
        raise RerankerError(
            f"reranker model directory {str(model_dir)!r} does not exist "
            "(retrieval.reranker_path must name a local cross-encoder directory; weights are never downloaded)"
        )
    if not (model_dir / "config.json").is_file():
        raise RerankerError(f"{str(model_dir)!r} is not a transformers model directory (no config.json)")
    return model_dir


def _read_config(model_dir: Path) -> dict:
    try:
        return json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise RerankerError(f"cannot read {str(model_dir / 'config.json')!r}: {e}") from e


def is_bge_reranker(model_dir: Path) -> bool:
    """Whether a directory holds a bge-reranker model: its path (any part, so a Hugging Face
    cache snapshot ``models--BAAI--bge-reranker-v2-m3/snapshots/<hash>`` counts) or its
    config's ``_name_or_path`` says so."""
    names = [part.lower() for part in model_dir.parts]
    names.append(str(_read_config(model_dir).get("_name_or_path") or "").lower())
    return any("bge-reranker" in name for name in names)


class _LockedReranker:
    """What both loaders share: empty input, the lock, plain float scores in input order."""

    name: str
    batch_size: int
    multilingual = True  # a model named by path: what it reads is its own business (bge-reranker-v2-m3 reads both)

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def _score_pairs(self, pairs: list[tuple[str, str]]) -> Sequence[float]:
        raise NotImplementedError

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not one string")
        if not texts:
            return []
        pairs = [(query, text) for text in texts]
        with self._lock:
            scores = self._score_pairs(pairs)
        out = [float(s) for s in scores]
        if len(out) != len(texts):  # a library contract we rely on for the zip in the pipeline
            raise RerankerError(f"reranker {self.name} returned {len(out)} scores for {len(texts)} texts")
        return out


class CrossEncoderReranker(_LockedReranker):
    """Any local cross-encoder directory through sentence-transformers ``CrossEncoder``."""

    def __init__(
        self,
        path: str | Path,
        batch_size: int = 32,
        max_length: int = DEFAULT_MAX_LENGTH,
        normalize: bool = False,
        device: str = "cpu",
    ):
        super().__init__()
        model_dir = _model_dir(path)
        _force_offline()
        import torch
        from sentence_transformers import CrossEncoder

        # CrossEncoder's default activation for one-label models is a sigmoid; pin it so both
        # loaders return the same kind of number.
        activation = torch.nn.Sigmoid() if normalize else torch.nn.Identity()
        try:
            self._model = CrossEncoder(
                str(model_dir), device=device, local_files_only=True, max_length=max_length, activation_fn=activation
            )
        except (OSError, ValueError) as e:
            raise RerankerError(f"cannot load cross-encoder from {str(model_dir)!r}: {e}") from e
        if self._model.num_labels != 1:
            raise RerankerError(
                f"{str(model_dir)!r} has {self._model.num_labels} output labels; a reranker needs a one-logit relevance head"
            )
        self.name = f"cross-encoder:{path}"
        self.batch_size = batch_size

    def _score_pairs(self, pairs: list[tuple[str, str]]) -> Sequence[float]:
        return self._model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True).tolist()


def _silence_flag_progress_bars() -> None:
    """FlagReranker draws two tqdm bars on stderr whenever a call has at least ``batch_size``
    pairs, with no option to turn them off; in a server that is two bars per query. Swap the
    module's tqdm for a disabled one (only FlagEmbedding's encoder-only reranker reads these
    names)."""
    from FlagEmbedding.inference.reranker.encoder_only import base

    for attr in ("tqdm", "trange"):
        original = getattr(base, attr, None)
        if original is None or getattr(original, "_kgrag_silenced", False):
            continue

        def silenced(*args, _original=original, **kwargs):
            kwargs["disable"] = True
            return _original(*args, **kwargs)

        silenced._kgrag_silenced = True  # type: ignore[attr-defined]  # a marker on a function object
        setattr(base, attr, silenced)


class FlagEmbeddingReranker(_LockedReranker):
    """An encoder-only bge-reranker (base, large, v2-m3) through FlagEmbedding's ``FlagReranker``.

    Cost note (FlagEmbedding 1.4.2): every ``compute_score`` call first runs one extra forward
    pass over its first (longest) batch to probe for out-of-memory errors, then scores
    everything; the probe's scores are discarded. A call of n pairs therefore costs about
    n + min(n, batch_size) pair-forwards. Scoring all candidates in one call keeps that to one
    probe per query.
    """

    def __init__(
        self,
        path: str | Path,
        batch_size: int = 32,
        max_length: int = DEFAULT_MAX_LENGTH,
        normalize: bool = False,
        device: str = "cpu",
    ):
        super().__init__()
        model_dir = _model_dir(path)
        architectures = _read_config(model_dir).get("architectures") or []
        if not any(a.endswith("ForSequenceClassification") for a in architectures):
            raise RerankerError(
                f"{str(model_dir)!r} is not an encoder-only cross-encoder (architectures {architectures}); "
                "LLM-based bge rerankers (gemma, minicpm-layerwise) are not supported"
            )
        _force_offline()
        from FlagEmbedding import FlagReranker

        _silence_flag_progress_bars()
        try:
            self._model = FlagReranker(
                str(model_dir),
                use_fp16=device != "cpu",  # fp16 matmuls are slow or unsupported on CPU
                devices=[device],  # one device: no multi-process pool
                batch_size=batch_size,
                max_length=max_length,
                normalize=normalize,
            )
        except (OSError, ValueError) as e:
            raise RerankerError(f"cannot load bge-reranker from {str(model_dir)!r}: {e}") from e
        num_labels = getattr(self._model.model.config, "num_labels", 1)
        if num_labels != 1:
            raise RerankerError(f"{str(model_dir)!r} has {num_labels} output labels; a reranker needs a one-logit relevance head")
        self.name = f"flag:{path}"
        self.batch_size = batch_size

    def _score_pairs(self, pairs: list[tuple[str, str]]) -> Sequence[float]:
        scores = self._model.compute_score(pairs, batch_size=self.batch_size)
        return scores if isinstance(scores, list) else [scores]


ONNX_MODEL = "model.onnx"  # the graph ``kgrag reranker train`` writes, run by ``OnnxReranker``
MANIFEST = "reranker.json"  # what was trained, how, on what: read by ``OnnxReranker`` and ``kgrag stats``


def is_onnx_reranker(model_dir: Path) -> bool:
    """Whether a directory holds a reranker ``kgrag reranker train`` wrote."""
    return (model_dir / ONNX_MODEL).is_file() and (model_dir / MANIFEST).is_file()


class OnnxReranker(_LockedReranker):
    """A cross-encoder exported to ONNX (``kgrag.models.bert_onnx``, ``head="classifier"``) with
    its ``tokenizer.json``: pairs are tokenized as transformers does (``[CLS] q [SEP] p [SEP]``,
    token types 0 then 1, the longer side cut first down to ``max_length``), padded per batch."""

    def __init__(self, path: str | Path, batch_size: int = 16, normalize: bool = False):
        super().__init__()
        model_dir = Path(path).expanduser()
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            self.manifest = json.loads((model_dir / MANIFEST).read_text(encoding="utf-8"))
            self.max_length = int(self.manifest["max_length"])
            options = ort.SessionOptions()
            options.intra_op_num_threads = os.cpu_count() or 1
            options.inter_op_num_threads = 1
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            self._session = ort.InferenceSession(str(model_dir / self.manifest.get("onnx", ONNX_MODEL)), options,
                                                 providers=["CPUExecutionProvider"])
            self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        except Exception as e:  # noqa: BLE001 - any unreadable part (file, JSON, protobuf) is one failure
            raise RerankerError(f"cannot load the reranker in {str(model_dir)!r}: {type(e).__name__}: {e}") from e
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(self.max_length, strategy="longest_first")
        self._inputs = [i.name for i in self._session.get_inputs()]
        self._normalize = normalize
        self.multilingual = self.manifest.get("language") != "en"
        self.name = f"onnx:{path}"
        self.batch_size = batch_size

    def _score_pairs(self, pairs: list[tuple[str, str]]) -> Sequence[float]:
        import numpy as np

        from kgrag.models.bert_onnx import padded_feed

        encodings = self._tokenizer.encode_batch(pairs)
        out = np.zeros(len(pairs), dtype=np.float32)
        order = sorted(range(len(pairs)), key=lambda i: -len(encodings[i].ids))  # little padding per batch
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            feed = padded_feed([encodings[i] for i in rows])
            logits = self._session.run(None, {name: feed[name] for name in self._inputs})[0]
            out[rows] = logits.reshape(len(rows), -1)[:, 0]
        if self._normalize:
            return (1.0 / (1.0 + np.exp(-out))).tolist()
        return out.tolist()


def build_reranker(
    settings: RetrievalSettings, device: str = "cpu", normalize: bool = False
) -> Reranker | None:
    """The reranker at ``settings.reranker_path``, loaded now (call once per process), or None
    when no path is configured (the fused order stands)."""
    if settings.reranker_path is None:
        return None
    path = Path(settings.reranker_path).expanduser()
    if path.is_dir() and is_onnx_reranker(path):
        return OnnxReranker(settings.reranker_path, batch_size=settings.reranker_batch_size, normalize=normalize)
    model_dir = _model_dir(settings.reranker_path)
    loader = FlagEmbeddingReranker if is_bge_reranker(model_dir) else CrossEncoderReranker
    return loader(settings.reranker_path, batch_size=settings.reranker_batch_size, normalize=normalize, device=device)
