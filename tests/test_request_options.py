"""No silent no-ops (kgrag/request_options.py): an option the configuration cannot honour is a
400 naming the setting; one whose documented behaviour is to degrade carries a trace warning."""

from __future__ import annotations

import json

import pytest

from kgrag.config import Settings
from kgrag.request_options import UnavailableOption, check_options
from kgrag.server.app import create_app

QUESTION = "What is the LCA of two nodes in a tree?"


@pytest.fixture(scope="module")
def client(demo_kb):
    return create_app(demo_kb.settings, demo_kb, warm=False).test_client()


def test_rerank_sent_without_a_reranker_is_a_400_naming_the_setting(client):
    resp = client.post("/v1/retrieve", json={"question": QUESTION, "rerank": True})
    assert resp.status_code == 400, resp.get_json()
    error = resp.get_json()["error"]
    assert error["code"] == "option_unavailable"
    assert "retrieval.reranker_path" in error["message"] and "KGRAG_RETRIEVAL__RERANKER_PATH" in error["message"]
    assert client.post("/v1/query", json={"question": QUESTION, "rerank": True}).status_code == 400
    # left out, the default means "when one is configured"; false asks for nothing
    for body in ({"question": QUESTION}, {"question": QUESTION, "rerank": False}):
        resp = client.post("/v1/retrieve", json=body)
        assert resp.status_code == 200 and resp.get_json()["trace"]["warnings"] == []


def test_llm_options_without_an_llm_run_degraded_and_say_so(client):
    resp = client.post("/v1/query", json={"question": QUESTION, "iterate_driver": "llm", "rewrite": ["hyde"]})
    assert resp.status_code == 200, resp.get_json()
    warnings = resp.get_json()["trace"]["warnings"]
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith("iterate_driver 'llm' needs an LLM") and "KGRAG_LLM__MODEL" in warnings[0]
    assert warnings[1].startswith("rewrite ['hyde'] needs an LLM")
    off = client.post("/v1/retrieve", json={"question": QUESTION, "iterate": False, "iterate_driver": "entities"})
    assert off.get_json()["trace"]["warnings"] == ["iterate_driver 'entities' has no effect: iteration is off "
                                                    "(iterate: false)"]


def test_the_stream_carries_the_warnings_in_its_retrieval_event(client):
    resp = client.post("/v1/query", json={"question": QUESTION, "stream": True, "iterate_driver": "llm"})
    events = [block for block in resp.get_data(as_text=True).split("\n\n") if block.startswith("event: retrieval")]
    retrieval = json.loads(events[0].split("data: ", 1)[1])
    assert [w.split(":")[0] for w in retrieval["trace"]["warnings"]] == ["iterate_driver 'llm' needs an LLM and llm.model (KGRAG_LLM__MODEL) is unset"]


def test_settings_that_turn_on_an_llm_feature_without_an_llm_warn_too(tmp_path):
    settings = Settings(data_dir=tmp_path)
    settings.retrieval.iterate_driver = "llm"
    settings.retrieval.hyde = True
    assert [w.split(" needs")[0] for w in check_options(settings)] == [
        "retrieval.iterate_driver 'llm'", "retrieval.hyde"]
    settings.retrieval.reranker_path = str(tmp_path)
    assert check_options(settings, rerank=True) == check_options(settings)
    settings.retrieval.reranker_path = None
    with pytest.raises(UnavailableOption) as refused:
        check_options(settings, rerank=True)
    assert refused.value.setting == "retrieval.reranker_path"


def test_kgrag_query_refuses_rerank_without_a_reranker_naming_the_setting(demo_kb):
    from click.testing import CliRunner

    from kgrag.cli import main

    done = CliRunner().invoke(main, ["--data-dir", str(demo_kb.settings.data_dir), "query", "--rerank", QUESTION])
    assert done.exit_code == 2, done.output
    assert "retrieval.reranker_path" in done.output
