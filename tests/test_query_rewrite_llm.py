"""Query rewriting and the LLM iteration driver against a real local model (SmolLM2-135M behind
llama-cpp-python's server, called by litellm): the request goes out with the JSON schema, the
grammar-constrained reply parses, and each rewrite either reaches the paths (its lists in the
fused order, its texts in the trace) or is refused with the reason in the trace. A 135M model's
rewrites are often poor, which is the point of the validation: the tests accept either branch
but check that each is complete and consistent."""

from __future__ import annotations

import json

import pytest

from kgrag.models.llm import complete_json
from kgrag.retrieve.llm_rewrites import LLMDriver
from kgrag.retrieve.pipeline import Retriever
from kgrag.retrieve.query_llm import LLMQueryRewriter, messages_for, schema_for
from kgrag.retrieve.trace import result_dict
from tests.llm_server import llm_settings  # noqa: F401  (session fixture: the running server)

pytestmark = [pytest.mark.llm, pytest.mark.slow]

QUESTION = "In which city was the director of Glass Harbor born?"


@pytest.fixture(scope="module")
def query_llm_settings(llm_settings):  # noqa: F811
    # llama-cpp-python's server takes the schema as {"type": "json_object", "schema": ...}.
    return llm_settings.model_copy(update={"structured_output": "json_object", "query_timeout_s": 180.0,
                                           "query_max_tokens": 160})


def test_the_grammar_constrains_the_real_models_reply_to_the_schema(query_llm_settings):
    for kind in ("step_back", "iterate"):
        messages = messages_for(kind, QUESTION, passages="[1] Glass Harbor is a film directed by Maret Kuusik.")
        data = json.loads(complete_json(query_llm_settings, messages, schema_for(kind), name=kind))
        required = schema_for(kind)["required"]
        assert set(required) <= set(data), (kind, data)
        print(kind, data)
    assert isinstance(data["enough"], bool) and isinstance(data["next_query"], str)


def test_real_rewrites_reach_the_paths_or_fall_back_with_the_reason(demo_kb, query_llm_settings):
    retriever = Retriever(demo_kb.settings.retrieval, demo_kb.chunk_index, demo_kb.graph, demo_kb.embedder,
                          query_llm=LLMQueryRewriter(query_llm_settings))
    result = retriever.retrieve(QUESTION, top_k=10, iterate=False, rewrites=["hyde", "decompose"])
    trace = result_dict(result)["trace"]
    assert [r["kind"] for r in trace["rewriting"]] == ["hyde", "decompose"] and trace["llm_calls"] == 2
    fused_lists = set(trace["path_weights"])
    for rewriting in trace["rewriting"]:
        print(rewriting["kind"], rewriting["fallback_reason"], [q["text"] for q in rewriting["queries"]])
        assert rewriting["llm_calls"] == 1 and rewriting["llm_ms"] > 0
        if rewriting["fallback_reason"] is None:
            assert rewriting["queries"], rewriting
            for q in rewriting["queries"]:
                assert q["text"].strip() and q["paths"] and set(q["paths"]) <= fused_lists
        else:
            assert rewriting["queries"] == []
    tags = {"hyde": "@hyde", "decompose": "@sq"}
    for rewriting in trace["rewriting"]:  # a refused rewrite added no list
        if rewriting["fallback_reason"] is not None:
            assert not any(tags[rewriting["kind"]] in name for name in fused_lists)
    assert any("person-maret-kuusik" in h.chunk.doc_id for h in result.hits)
    retriever.close()


def test_the_real_llm_driver_plans_or_falls_back_saying_why(demo_kb, query_llm_settings):
    retriever = Retriever(demo_kb.settings.retrieval, demo_kb.chunk_index, demo_kb.graph, demo_kb.embedder)
    driver = LLMDriver(LLMQueryRewriter(query_llm_settings), retriever.entity_driver,
                       lambda ids: [c.text for c in demo_kb.chunk_index.get(ids)],
                       lambda text: [le.key for le in retriever.linker.link(text)])
    result = retriever.retrieve(QUESTION, top_k=10, iterate=True, driver=driver)
    it = result.iteration
    print(it.trace())
    assert it.driver == "llm" and it.llm_calls >= 1
    notes = [r.why for r in it.rounds[1:]] + [it.stopped]
    llm_planned = [r for r in it.rounds[1:] if r.why.startswith("the LLM read")]
    assert llm_planned or "enough" in it.stopped or any("LLM failed" in n for n in notes) \
        or "no new evidence" in it.stopped or "budget" in it.stopped, notes
    for r in llm_planned:  # an LLM round searched the LLM's own query
        assert r.query != QUESTION and any(p.startswith("bm25@") for p in r.paths)
    retriever.close()
