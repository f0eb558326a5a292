"""The ONNX Runtime engine (``kgrag.models.onnx_embedder``) with the shipped MiniLM: the same
vectors as sentence-transformers, an export made once and reused, a fallback to
sentence-transformers for what it cannot reproduce, and no transformers import to answer."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kgrag.config import EmbedderSettings
from kgrag.models import onnx_embedder
from kgrag.models.embedder import SentenceTransformerEmbedder, build_embedder, minilm_path
from kgrag.models.onnx_embedder import OnnxEmbedder, exported_path, supported

# Short and long (past MiniLM's 256 tokens: truncated the same way), Chinese, code-like, empty.
TEXTS = [
    "Lomonosov Moscow State University is a public research university in Moscow, founded in 1755.",
    "What is the Slack channel for the executive who leads the division responsible for legal compliance?",
    "The lowest common ancestor of two nodes in a tree is the deepest node that has both as descendants. " * 12,
    "最近公共祖先 (LCA) 是树中两个节点的最深公共祖先。",
    "#ciso @gl-people-ops-team snake_case CamelCase v2.3.1",
    "",
    "a",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory, monkeypatch_module):
    folder = tmp_path_factory.mktemp("onnx-cache")
    monkeypatch_module.setenv("KGRAG_ONNX_CACHE", str(folder))
    return folder


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.fixture(scope="module")
def engines(cache):
    onnx = build_embedder(EmbedderSettings(name="minilm", batch_size=3))
    torch = build_embedder(EmbedderSettings(name="minilm", batch_size=3, engine="torch"))
    return onnx, torch


def test_the_onnx_engine_gives_sentence_transformers_vectors(engines, cache):
    onnx, torch = engines
    assert isinstance(onnx, OnnxEmbedder) and isinstance(torch, SentenceTransformerEmbedder)
    assert list(cache.glob("*.onnx")) == [exported_path(minilm_path(), cache)]
    got, want = onnx.embed_passages(TEXTS), torch.embed_passages(TEXTS)
    assert got.shape == want.shape == (len(TEXTS), 384) and got.dtype == np.float32
    assert float(np.abs(got - want).max()) < 1e-5
    np.testing.assert_allclose(onnx.embed_queries(TEXTS[1:2]), torch.embed_queries(TEXTS[1:2]), atol=1e-5)
    assert (onnx.dim, onnx.max_tokens, onnx.multilingual) == (torch.dim, torch.max_tokens, torch.multilingual)
    assert [onnx.count_tokens(t) for t in TEXTS] == [torch.count_tokens(t) for t in TEXTS]


def test_the_export_is_made_once_and_reused(engines, cache, monkeypatch):
    target = exported_path(minilm_path(), cache)
    made = target.stat().st_mtime_ns

    def no_export(*args):
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_embedder, "export", no_export)
    again = build_embedder(EmbedderSettings(name="minilm"))
    assert isinstance(again, OnnxEmbedder) and target.stat().st_mtime_ns == made
    np.testing.assert_allclose(again.embed_queries(["who founded it?"]), engines[1].embed_queries(["who founded it?"]),
                               atol=1e-5)


def test_a_failed_export_falls_back_to_sentence_transformers_and_says_why(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("KGRAG_ONNX_CACHE", str(tmp_path / "empty-cache"))

    def broken(model_dir, target):
        raise RuntimeError("exporter unavailable")

    monkeypatch.setattr(onnx_embedder, "export", broken)
    with caplog.at_level(logging.WARNING, logger="kgrag.models.embedder"):
        embedder = build_embedder(EmbedderSettings(name="minilm"))
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert "exporter unavailable" in caplog.text and "not ONNX Runtime" in caplog.text


def test_an_export_leaves_no_partial_file_behind(tmp_path, monkeypatch):
    """A failed export deletes its fragment; one whose process was killed is deleted by the next
    export; a live process's fragment is left to it."""
    from kgrag.models import bert_onnx

    target = tmp_path / "minilm.onnx"
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    killed = target.with_name(f"{target.name}.{int(finished.stdout)}.partial")
    running = target.with_name(f"{target.name}.{os.getppid()}.partial")
    killed.write_bytes(b"half an export")
    running.write_bytes(b"being written")

    def fails_midway(model_dir, path):
        Path(path).write_bytes(b"a fragment")
        raise RuntimeError("exporter died")

    monkeypatch.setattr(bert_onnx, "build", fails_midway)
    with pytest.raises(RuntimeError, match="exporter died"):
        onnx_embedder.export(minilm_path(), target)
    assert sorted(p.name for p in tmp_path.iterdir()) == [running.name]


def _model_copy(tmp_path, change):
    copy = tmp_path / "model"
    shutil.copytree(minilm_path(), copy, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    (copy / "model.safetensors").symlink_to(minilm_path() / "model.safetensors")
    change(copy)
    return copy


def test_a_model_it_cannot_reproduce_runs_on_sentence_transformers(tmp_path):
    assert supported(minilm_path()) is None

    def with_dense(copy):
        modules = json.loads((copy / "modules.json").read_text())
        modules.append({"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"})
        (copy / "modules.json").write_text(json.dumps(modules))

    assert "Dense" in (supported(_model_copy(tmp_path / "a", with_dense)) or "")

    def max_pooling(copy):
        config = copy / "1_Pooling" / "config.json"
        pooling = json.loads(config.read_text())
        pooling.update(pooling_mode_mean_tokens=False, pooling_mode_max_tokens=True)
        config.write_text(json.dumps(pooling))

    copy = _model_copy(tmp_path / "b", max_pooling)
    assert "pooling" in (supported(copy) or "")
    assert supported(_model_copy(tmp_path / "c", lambda c: (c / "tokenizer.json").unlink())) == "no tokenizer.json"


HEAVY = ("torch", "transformers", "sentence_transformers", "sklearn", "spacy", "thinc")


def _imported_after(code: str) -> list[str]:
    """Which of ``HEAVY`` a fresh interpreter has imported after running ``code``."""
    script = f"import sys\n{code}\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1].replace("'", '"'))


def test_answering_a_question_imports_no_transformers_or_sentence_transformers(engines):
    """The point of the engine at start-up: those imports were most of a server's start (once
    the graph is exported: ``engines`` made it in this module's cache, which the child reads)."""
    imported = _imported_after(
        "from kgrag.config import EmbedderSettings\n"
        "from kgrag.models.embedder import build_embedder\n"
        "vector = build_embedder(EmbedderSettings()).embed_queries(['who founded Moscow State University?'])\n"
        "assert vector.shape[0] == 1 and abs(float((vector ** 2).sum()) - 1) < 1e-4, vector.shape")
    assert not {"transformers", "sentence_transformers", "sklearn"} & set(imported), imported


def test_the_graph_is_written_without_torch(tmp_path):
    """No export in the cache: the shipped MiniLM's graph is written from its weights
    (kgrag/models/bert_onnx.py) with torch never imported, and embeds as before."""
    assert not list(tmp_path.iterdir())
    imported = _imported_after(
        f"import os; os.environ['KGRAG_ONNX_CACHE'] = {str(tmp_path)!r}\n"
        "from kgrag.config import EmbedderSettings\n"
        "from kgrag.models.embedder import build_embedder\n"
        "from kgrag.models.onnx_embedder import OnnxEmbedder\n"
        "e = build_embedder(EmbedderSettings(name='minilm'))\n"
        "assert isinstance(e, OnnxEmbedder), type(e)\n"
        "assert e.embed_passages(['a passage']).shape == (1, 384)")
    assert not {"torch", "transformers", "sentence_transformers"} & set(imported), imported
    assert [p.suffix for p in tmp_path.iterdir()] == [".onnx"]


def test_a_warm_server_imports_no_torch_spacy_or_transformers(demo_kb):
    """Start-up: a server answers with ONNX Runtime and reads spaCy's stop-word list from its
    file, so none of these large imports (most of a start before) happens in a warm process."""
    imported = _imported_after(
        "from kgrag.config import Settings\n"
        "from kgrag.server.app import create_app\n"
        f"app = create_app(Settings(data_dir={str(demo_kb.settings.data_dir)!r}))\n"
        "assert app.config['KGRAG_WARM']")
    assert imported == []
