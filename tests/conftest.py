"""Shared fixtures: real models loaded once per test session, fresh knowledge bases per test."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# Weights are never downloaded: a test that tries fails fast instead of hanging.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO.parent / "shared" / "bench"


def bench_path(*parts: str) -> Path:
    """A file of the shared benchmark sets; tests that need one skip with the reason if absent."""
    p = BENCH.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared benchmark file {p} is not present in this checkout")
    return p


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def hotpot_records(n: int) -> list[dict]:
    """The first n passages of the HotpotQA development corpus (real Wikipedia text)."""
    out = []
    with bench_path("hotpotqa_dev500", "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            out.append(json.loads(line))
            if len(out) == n:
                break
    return out


@pytest.fixture(scope="session")
def embedder():
    from kgrag.config import EmbedderSettings
    from kgrag.models.embedder import build_embedder

    return build_embedder(EmbedderSettings())


@pytest.fixture(scope="session")
def recognizer():
    from kgrag.config import ExtractionSettings
    from kgrag.models.ner import EntityRecognizer

    return EntityRecognizer(ExtractionSettings())


@pytest.fixture
def settings(tmp_path):
    from kgrag.config import Settings

    return Settings(data_dir=tmp_path / "kb")


@pytest.fixture
def components(settings, embedder, recognizer):
    """Embedded stores in a fresh data dir, sharing the session's loaded models."""
    from kgrag.components import Components

    comps = Components(settings, embedder=embedder, recognizer=recognizer)
    yield comps
    comps.close()


@pytest.fixture(scope="session")
def cross_encoder_dir(tmp_path_factory) -> Path:
    """A local cross-encoder directory: the shipped MiniLM encoder plus a one-logit
    classification head initialized from a fixed seed (MODELS.md, "Cross-encoder reranker").

    The head is untrained, so its scores are meaningless: it exercises the real loading,
    batching and ordering code, never ranking quality.
    """
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from kgrag.models.embedder import minilm_path

    source = minilm_path()
    out = tmp_path_factory.mktemp("rerankers") / "minilm-cross-encoder"
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "newly initialized classifier weights" is the point here
    try:
        torch.manual_seed(0)
        model = AutoModelForSequenceClassification.from_pretrained(str(source), num_labels=1)
    finally:
        hf_logging.set_verbosity(verbosity)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(str(source)).save_pretrained(out)
    return out
