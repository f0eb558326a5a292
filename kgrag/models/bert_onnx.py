"""A BERT encoder's ONNX graph written from its ``model.safetensors`` with the ``onnx`` library:
no torch, no transformers. The shipped MiniLM (and any BERT-family sentence-transformers model:
``model_type`` "bert", absolute positions, GELU) is exported this way, so serving and ingesting
need neither PyTorch nor its export (``kgrag.models.onnx_embedder``). A cross-encoder (a
``BertForSequenceClassification`` with one label: the reranker ``kgrag reranker train`` fits) is
written the same way with its head (``head="classifier"``): the pooler (dense + tanh on the first
token) and the classifier, output ``logits`` (batch, labels).

The graph is the one ``transformers.BertModel`` computes in eval mode (eager attention):
embeddings (word + absolute position + token type) → LayerNorm → per layer: self-attention with
the additive mask ``(1 - mask) * float32.min``, output projection, residual LayerNorm, GELU
feed-forward, residual LayerNorm; output ``last_hidden_state``. Checked against
sentence-transformers in tests/test_onnx_embedder.py (max |difference| under 1e-5).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

import numpy as np

OPSET = 17  # LayerNormalization
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def padded_feed(encodings: list[Any], pad_id: int = 0) -> dict[str, np.ndarray]:
    """``INPUTS`` for one batch of ``tokenizers`` encodings, padded to the longest with ``pad_id``
    (attention 0 and token type 0 on the padding)."""
    width = max(len(e.ids) for e in encodings)
    feed = {name: np.zeros((len(encodings), width), dtype=np.int64) for name in INPUTS}
    feed["input_ids"][:] = pad_id
    for row, e in enumerate(encodings):
        n = len(e.ids)
        feed["input_ids"][row, :n] = e.ids
        feed["attention_mask"][row, :n] = 1
        feed["token_type_ids"][row, :n] = e.type_ids
    return feed


def reproduces(model_dir: Path) -> str | None:
    """None when ``build`` writes this model's graph; else why not."""
    try:
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return f"config.json could not be read ({e})"
    if config.get("model_type") != "bert":
        return f"model_type {config.get('model_type')!r} (only 'bert' is written without torch)"
    if config.get("position_embedding_type", "absolute") != "absolute":
        return f"position_embedding_type {config.get('position_embedding_type')!r}"
    if config.get("hidden_act", "gelu") != "gelu":
        return f"hidden_act {config.get('hidden_act')!r}"
    if not (model_dir / "model.safetensors").is_file():
        return "no model.safetensors"
    return None


class _Graph:
    """Nodes and initializers, named in order."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._n = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(value, name))
        return name

    def op(self, kind: str, inputs: list[str], **attrs: Any) -> str:
        self._n += 1
        out = f"{kind.lower()}_{self._n}"
        self.nodes.append(self.helper.make_node(kind, inputs, [out], **attrs))
        return out

    def linear(self, x: str, weights: dict[str, np.ndarray], prefix: str) -> str:
        w = self.const(f"{prefix}.weight_t", np.ascontiguousarray(weights[f"{prefix}.weight"].T))
        b = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(self, x: str, weights: dict[str, np.ndarray], prefix: str, eps: float) -> str:
        gamma = self.const(f"{prefix}.weight", weights[f"{prefix}.weight"])
        beta = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=eps)


def build(model_dir: Path, target: Path, head: Literal["encoder", "classifier"] = "encoder") -> None:
    """Writes the BERT model in ``model_dir`` as an ONNX graph to ``target`` (inputs
    ``input_ids``, ``attention_mask``, ``token_type_ids``). ``head="encoder"``: output
    ``last_hidden_state``; ``"classifier"``: a sequence-classification model's ``logits``."""
    import onnx
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    weights = {k.removeprefix("bert."): v for k, v in load_file(str(model_dir / "model.safetensors")).items()}
    if head == "classifier" and not {"pooler.dense.weight", "classifier.weight"} <= weights.keys():
        raise ValueError(f"{model_dir} holds no sequence-classification head (pooler and classifier weights)")
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    head_dim, eps = hidden // heads, float(config.get("layer_norm_eps", 1e-12))
    g = _Graph()

    # embeddings
    word = g.op("Gather", [g.const("word_embeddings", weights["embeddings.word_embeddings.weight"]), "input_ids"])
    length = g.op("Gather", [g.op("Shape", ["input_ids"]), g.const("one", np.array(1, dtype=np.int64))], axis=0)
    positions = g.op("Range", [g.const("zero", np.array(0, dtype=np.int64)), length, "one"])
    position = g.op("Gather", [g.const("position_embeddings", weights["embeddings.position_embeddings.weight"]),
                               positions])
    token_type = g.op("Gather", [g.const("token_type_embeddings", weights["embeddings.token_type_embeddings.weight"]),
                                 "token_type_ids"])
    x = g.layer_norm(g.op("Add", [g.op("Add", [word, token_type]), position]), weights, "embeddings.LayerNorm", eps)

    # additive attention mask: 0 where attended, float32's minimum where padded, as BertModel
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    inverted = g.op("Sub", [g.const("one_f", np.array(1.0, dtype=np.float32)), mask])
    bias = g.op("Mul", [inverted, g.const("f32_min", np.array(np.finfo(np.float32).min, dtype=np.float32))])
    bias = g.op("Unsqueeze", [bias, g.const("mask_axes", np.array([1, 2], dtype=np.int64))])

    split_heads = g.const("split_heads", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_heads = g.const("merge_heads", np.array([0, 0, hidden], dtype=np.int64))
    scale = g.const("scale", np.array(math.sqrt(head_dim), dtype=np.float32))
    half, root2 = g.const("half", np.array(0.5, dtype=np.float32)), g.const("root2", np.array(math.sqrt(2.0), dtype=np.float32))

    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"

        def heads_of(name: str, perm: list[int], p: str = p, x: str = x) -> str:
            projected = g.linear(x, weights, f"{p}.attention.self.{name}")
            return g.op("Transpose", [g.op("Reshape", [projected, split_heads])], perm=perm)

        q, k_t, v = heads_of("query", [0, 2, 1, 3]), heads_of("key", [0, 2, 3, 1]), heads_of("value", [0, 2, 1, 3])
        scores = g.op("Add", [g.op("Div", [g.op("MatMul", [q, k_t]), scale]), bias])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merge_heads])
        attended = g.linear(context, weights, f"{p}.attention.output.dense")
        x = g.layer_norm(g.op("Add", [attended, x]), weights, f"{p}.attention.output.LayerNorm", eps)
        inner = g.linear(x, weights, f"{p}.intermediate.dense")
        gelu = g.op("Mul", [g.op("Mul", [inner, half]),
                            g.op("Add", [g.const(f"one_{i}", np.array(1.0, dtype=np.float32)),
                                         g.op("Erf", [g.op("Div", [inner, root2])])])])
        out = g.linear(gelu, weights, f"{p}.output.dense")
        x = g.layer_norm(g.op("Add", [out, x]), weights, f"{p}.output.LayerNorm", eps)

    dims = ["batch", "tokens"]
    if head == "classifier":
        first = g.op("Gather", [x, g.const("zero_index", np.array(0, dtype=np.int64))], axis=1)
        pooled = g.op("Tanh", [g.linear(first, weights, "pooler.dense")])
        logits = g.linear(pooled, weights, "classifier")
        g.nodes.append(helper.make_node("Identity", [logits], ["logits"]))
        labels = int(weights["classifier.weight"].shape[0])
        output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", labels])
    else:
        g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
        output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*dims, hidden])
    graph = helper.make_graph(
        g.nodes, f"bert_{head}",
        [helper.make_tensor_value_info(name, TensorProto.INT64, dims) for name in INPUTS],
        [output],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="kgrag")
    onnx.checker.check_model(model)
    onnx.save(model, str(target))
