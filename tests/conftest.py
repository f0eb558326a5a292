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


def hotpot_corpus(folder: Path, n: int) -> Path:
    """A corpus file of the first n HotpotQA passages in ``folder``."""
    return write_jsonl(folder / "corpus.jsonl", hotpot_records(n))


def ingested_corpus(components, corpus: Path, n: int):
    """``components`` with ``corpus`` ingested, checking that its n documents went in."""
    report = components.ingest_job().run([corpus], progress=False)
    assert report.ok and len(report.new) == n
    return components


def ingested_kb(data_dir: Path, embedder, recognizer, paths: list[Path], new: int):
    """Components over a fresh knowledge base in ``data_dir`` with ``paths`` ingested (the shared
    models), checking that ``new`` documents went in and none failed."""
    from kgrag.components import Components
    from kgrag.config import Settings

    comps = Components(Settings(data_dir=data_dir), embedder=embedder, recognizer=recognizer)
    report = comps.ingest_job().run(paths, progress=False)
    assert len(report.new) == new and not report.failed, report
    return comps


def pages_kb(tmp_path_factory, embedder, recognizer, pages: dict[str, str]):
    """Components over a fresh knowledge base of ``pages`` (file name → text) ingested; the
    caller closes them."""
    folder = tmp_path_factory.mktemp("pages")
    for name, text in pages.items():
        (folder / name).write_text(text, encoding="utf-8")
    return ingested_kb(tmp_path_factory.mktemp("kb"), embedder, recognizer, sorted(folder.iterdir()), len(pages))


def pages_fixture(pages: dict[str, str]):
    """A module-scoped fixture giving components over a fresh knowledge base of ``pages`` (file
    name → text), closed after the module: ``kb = pages_fixture(PAGES)`` in a test module."""

    @pytest.fixture(scope="module")
    def kb(tmp_path_factory, embedder, recognizer):
        comps = pages_kb(tmp_path_factory, embedder, recognizer, pages)
        yield comps
        comps.close()

    return kb


def extractive_answer(kb, question: str):
    """``kb``'s answer to ``question`` as the API gives it, checked to be an extractive answer
    whose every sentence is cited and supported."""
    answer = kb.generator.answer_to(question, kb.retriever.retrieve(question))
    assert answer.mode == "extractive" and not answer.unsupported_sentences and not answer.invalid_citations
    return answer


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


# Fictional, so no model or corpus knows the answer: only the graph connects the two passages.
TWO_HOP = [
    {"id": "film-glass-harbor", "title": "Glass Harbor",
     "text": "Glass Harbor is a 2011 Estonian drama film directed by Maret Kuusik. The film follows "
             "a lighthouse keeper on the island of Vormsi during a long winter."},
    {"id": "person-maret-kuusik", "title": "Maret Kuusik",
     "text": "Maret Kuusik is a film director and screenwriter. She was born in Tartu in 1974 and "
             "studied cinematography in Tallinn before making documentaries."},
]


@pytest.fixture(scope="session")
def demo_kb(tmp_path_factory, embedder, recognizer):
    """The bundled demo corpus plus a fictional two-hop pair, ingested once per session with the
    demo glossary. Read-only: tests that change a knowledge base build their own."""
    import shutil

    from kgrag.components import Components
    from kgrag.config import Settings
    from kgrag.lexicon.glossary import load_glossary

    root = tmp_path_factory.mktemp("demo-kb")
    corpus = root / "corpus"
    shutil.copytree(REPO / "kgrag" / "demo" / "corpus", corpus)
    write_jsonl(corpus / "two_hop.jsonl", TWO_HOP)
    comps = Components(Settings(data_dir=root / "kb"), embedder=embedder, recognizer=recognizer)
    glossary = load_glossary(REPO / "kgrag" / "demo" / "glossary.csv")
    report = comps.ingest_job().run([corpus], glossary_entities=glossary)
    assert not report.failed
    yield comps
    comps.close()


@pytest.fixture(scope="session")
def live_server(demo_kb):
    """The app over the demo knowledge base on a real loopback HTTP server, once per session
    (browser tests and the OpenAPI property run share it). Its JSON request log is kept."""
    import io

    from kgrag.server.app import create_app
    from tests.live_server import start_server

    log = io.StringIO()
    live = start_server(create_app(demo_kb.settings, demo_kb, log_stream=log), log)
    yield live
    live.stop()


def pytest_terminal_summary(terminalreporter):
    """Name the database servers this run started (e.g. the Neo4j version), or say none was."""
    import sys

    servers = sys.modules.get("tests.neo4j_servers")
    started = getattr(servers, "STARTED", {})
    for name, description in started.items():
        terminalreporter.write_line(f"{name} server: {description}")
