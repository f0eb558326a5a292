"""LLM query rewriting (HyDE, multi-query, decomposition, step-back) and the LLM iteration
driver, on the demo knowledge base (embedded stores, shipped models).

The replies come from a tiny OpenAI-compatible server on 127.0.0.1 (``tests/chat_server.py``):
canned JSON to check that what the LLM says reaches the paths and the trace, garbage and a
server that sleeps past the timeout to check the fallbacks. The requests go out through
litellm and the replies are parsed by the shipped code; the real model (SmolLM2 served by
llama-cpp-python) is driven in ``test_query_rewrite_llm.py``."""

from __future__ import annotations

import json
import time

import pytest

from kgrag.components import Components
from kgrag.config import LLMSettings, Settings
from kgrag.eval.runner import EvalConfigError, parse_mode, run_eval
from kgrag.models.llm import complete_json
from kgrag.retrieve.llm_rewrites import REWRITES, LLMDriver
from kgrag.retrieve.pipeline import RetrievalError, Retriever
from kgrag.retrieve.query_llm import (
    PROMPT_KINDS,
    PROMPTS,
    LLMQueryRewriter,
    QueryRewriteRejected,
    accept,
    accept_judgement,
    language_of,
    messages_for,
    schema_for,
)
from kgrag.retrieve.trace import result_dict
from kgrag.server.app import create_app
from kgrag.text.scripts import has_han
from kgrag.types import Turn
from tests.chat_server import chat_server, schema_key
from tests.conftest import TWO_HOP, write_jsonl

QUESTION = "In which city was the director of Glass Harbor born?"
SUB_QUESTIONS = ["Who directed Glass Harbor?", "Where was Maret Kuusik born?"]
CANNED = {
    "passage": {"passage": "Glass Harbor was directed by Maret Kuusik, a film director born in Tartu."},
    "questions": {"questions": ["Where was the director of the film Glass Harbor born?",
                                "Birthplace of the Glass Harbor director"]},
    "sub_questions": {"sub_questions": SUB_QUESTIONS},
    "question": {"question": "Who made the film Glass Harbor?"},
    "enough": {"enough": False, "next_query": "Where was Maret Kuusik born?"},
}


def canned(body: dict) -> str:
    return json.dumps(CANNED[schema_key(body)])


def _retriever(kb, llm_settings: LLMSettings | None, **retrieval) -> Retriever:
    settings = kb.settings.retrieval.model_copy(update=retrieval)
    return Retriever(settings, kb.chunk_index, kb.graph, kb.embedder,
                     query_llm=LLMQueryRewriter(llm_settings) if llm_settings else None)


def _ids(result) -> list[str]:
    return [h.chunk.id for h in result.hits]


# -- parsing and validation ----------------------------------------------------------------------
def test_good_replies_are_parsed_per_kind():
    q = QUESTION
    assert accept("hyde", json.dumps(CANNED["passage"]), q) == [CANNED["passage"]["passage"]]
    assert accept("multi_query", json.dumps(CANNED["questions"]), q, 3) == CANNED["questions"]["questions"]
    assert accept("decompose", json.dumps(CANNED["sub_questions"]), q) == SUB_QUESTIONS
    assert accept("step_back", '```json\n{"question": "Who made Glass Harbor?"}\n```', q) == ["Who made Glass Harbor?"]
    many = {"questions": [f"Where was the director of film number {i} born?" for i in range(6)]}
    assert len(accept("multi_query", json.dumps(many), q, 2)) == 2  # at most n
    zh = "《玻璃港》导演的出生地是哪里？"
    assert accept("decompose", '{"sub_questions": ["《玻璃港》的导演是谁？", "Who directed it?"]}', zh) == \
        ["《玻璃港》的导演是谁？"]  # the English one is dropped, the Chinese one kept
    assert accept_judgement('{"enough": true, "next_query": ""}', q).enough
    assert accept_judgement(json.dumps(CANNED["enough"]), q).next_query == "Where was Maret Kuusik born?"


@pytest.mark.parametrize("kind, reply, why", [
    ("hyde", "Sure! Glass Harbor is a film.", "not JSON"),
    ("hyde", '{"text": "Glass Harbor was directed by Maret Kuusik."}', "does not match the schema"),
    ("hyde", '{"passage": "Tartu."}', "too short"),
    ("hyde", '{"passage": "I\'m sorry, but I cannot write a passage about that film."}', "refusal"),
    ("hyde", '{"passage": "《玻璃港》是一部由玛雷特·库西克执导的爱沙尼亚电影。"}', "language"),
    ("multi_query", '{"questions": []}', "none given"),
    ("multi_query", json.dumps({"questions": [QUESTION, QUESTION.upper(), ""]}), "the question unchanged"),
    ("decompose", '{"sub_questions": "Who directed Glass Harbor?"}', "does not match the schema"),
    ("step_back", '{"question": "' + "very " * 80 + 'general?"}', "longer than"),
    ("decompose", '{"sub_questions": ["The answer is 12", "1984"]}', "2× sharing no content word"),
    ("hyde", '{"passage": "The ship sank in the North Atlantic Ocean after striking an iceberg."}', "no content word"),
])
def test_unusable_replies_are_rejected_naming_why(kind, reply, why):
    with pytest.raises(QueryRewriteRejected, match=why):
        accept(kind, reply, QUESTION)


def test_a_judgement_without_a_next_query_is_rejected():
    with pytest.raises(QueryRewriteRejected, match="empty"):
        accept_judgement('{"enough": false, "next_query": "  "}', QUESTION)
    with pytest.raises(QueryRewriteRejected, match="not JSON"):
        accept_judgement("enough", QUESTION)


def test_prompts_exist_in_both_languages_and_are_chosen_by_the_question():
    for kind in PROMPT_KINDS:
        for language in ("en", "zh"):
            text = (PROMPTS / f"{kind}.{language}.txt").read_text(encoding="utf-8")
            system, _, user = text.partition("\n---\n")
            assert "$question" in user and "JSON" in system, (kind, language)
            assert has_han(system) == (language == "zh"), (kind, language)
    assert language_of(QUESTION) == "en" and language_of("Glass Harbor 的导演是谁？") == "zh"
    en = messages_for("multi_query", QUESTION, n=3)
    zh = messages_for("multi_query", "《玻璃港》导演的出生地是哪里？", n=3)
    assert not has_han(en[0]["content"]) and en[1]["content"] == f"Question: {QUESTION}"
    assert has_han(zh[0]["content"]) and zh[1]["content"].startswith("问题：") and "换 3 种" in zh[0]["content"]
    assert schema_for("multi_query", 4)["properties"]["questions"]["maxItems"] == 4


@pytest.mark.parametrize("mode, expected", [
    ("json_schema", {"type": "json_schema", "json_schema": {"name": "hyde", "schema": schema_for("hyde")}}),
    ("json_object", {"type": "json_object", "schema": schema_for("hyde")}),
    ("off", None),
])
def test_the_output_constraint_is_sent_as_the_provider_takes_it(mode, expected):
    with chat_server(lambda body: json.dumps(CANNED["passage"])) as server:
        reply = complete_json(server.settings(structured_output=mode), messages_for("hyde", QUESTION),
                              schema_for("hyde"), name="hyde")
    assert json.loads(reply) == CANNED["passage"]
    assert server.requests[0].get("response_format") == expected


# -- the rewrites in the pipeline ----------------------------------------------------------------
def test_rewritten_queries_reach_the_paths_and_the_trace(demo_kb):
    with chat_server(canned) as server:
        retriever = _retriever(demo_kb, server.settings())
        result = retriever.retrieve(QUESTION, top_k=10, iterate=False, rewrites=REWRITES)
    trace = result_dict(result)["trace"]
    assert [r["kind"] for r in trace["rewriting"]] == list(REWRITES)
    assert all(r["fallback_reason"] is None and r["llm_calls"] == 1 for r in trace["rewriting"])
    assert trace["llm_calls"] == 4 == len(server.requests) and "rewrite" in trace["timings_ms"]
    assert all(body["response_format"]["type"] == "json_object" for body in server.requests)
    assert all(body["messages"][1]["content"] == f"Question: {QUESTION}" for body in server.requests)
    hyde, multi, decompose, step_back = trace["rewriting"]
    assert hyde["queries"][0]["paths"] == ["dense@hyde"]
    # Each rewrite searched on every path, and by its translation where that finds something
    # (the demo is bilingual: kgrag.retrieve.paths.TranslatedKeywordPath).
    assert [[p for p in q["paths"] if not p.startswith("translated@")] for q in multi["queries"]] == \
        [["dense@mq1", "bm25@mq1", "graph@mq1"], ["dense@mq2", "bm25@mq2", "graph@mq2"]]
    assert {p for q in multi["queries"] for p in q["paths"]} <= {f"{name}@mq{i}" for i in (1, 2)
                                                                 for name in ("dense", "bm25", "graph", "translated")}
    assert step_back["queries"][0]["text"] == CANNED["question"]["question"]
    # Decomposition: each sub-question searched on every path, its own evidence kept.
    assert [q["text"] for q in decompose["queries"]] == SUB_QUESTIONS
    kuusik = {c.id for c in demo_kb.chunk_index.get(_ids(result)) if "person-maret-kuusik" in c.doc_id}
    second = decompose["queries"][1]["evidence"]
    assert set(second) == {"dense@sq2", "bm25@sq2", "graph@sq2"} and kuusik & set(second["bm25@sq2"])
    # The lists vote in fusion: hits carry them, and the answer's page is found.
    assert any(name.endswith("@sq2") for h in result.hits for name in h.paths)
    assert any(name == "dense@hyde" for h in result.hits for name in h.paths)
    assert any("person-maret-kuusik" in h.chunk.doc_id for h in result.hits[:3])
    retriever.close()


def test_a_switch_in_the_settings_runs_its_rewrite(demo_kb):
    with chat_server(canned) as server:
        retriever = _retriever(demo_kb, server.settings(), step_back=True)
        result = retriever.retrieve(QUESTION, top_k=5, iterate=False)
        assert [r.kind for r in result.rewriting] == ["step_back"] and len(server.requests) == 1
        none = retriever.retrieve(QUESTION, top_k=5, iterate=False, rewrites=[])
        assert none.rewriting == [] and len(server.requests) == 1
    retriever.close()


@pytest.mark.parametrize("reply, why", [
    ("Here are some ideas: Glass Harbor, Tartu", "not JSON"),
    ('{"unexpected": 1}', "does not match the schema"),
])
def test_garbage_from_the_llm_falls_back_to_the_question_as_asked(demo_kb, reply, why):
    plain = demo_kb.retriever.retrieve(QUESTION, top_k=10, iterate=False, rewrites=[])
    with chat_server(lambda body: reply) as server:
        retriever = _retriever(demo_kb, server.settings())
        result = retriever.retrieve(QUESTION, top_k=10, iterate=False, rewrites=REWRITES)
    assert len(server.requests) == 4
    for rewriting in result_dict(result)["trace"]["rewriting"]:
        assert why in rewriting["fallback_reason"] and rewriting["queries"] == [] and rewriting["llm_calls"] == 1
    assert _ids(result) == _ids(plain)
    retriever.close()


def test_a_slow_llm_times_out_and_the_question_goes_on_unrewritten(demo_kb):
    plain = demo_kb.retriever.retrieve(QUESTION, top_k=10, iterate=False, rewrites=[])
    with chat_server(canned, delay_s=4.0) as server:
        retriever = _retriever(demo_kb, server.settings(query_timeout_s=1.0))
        started = time.perf_counter()
        result = retriever.retrieve(QUESTION, top_k=10, iterate=False, rewrites=["hyde"])
        elapsed = time.perf_counter() - started
    (hyde,) = result.rewriting
    assert "Timeout" in hyde.fallback_reason and hyde.llm_ms < 3500 and elapsed < 3.5
    assert _ids(result) == _ids(plain)
    retriever.close()


def test_without_an_llm_a_rewrite_says_so_and_an_unknown_one_is_refused(demo_kb):
    retriever = _retriever(demo_kb, None)
    result = retriever.retrieve(QUESTION, top_k=5, iterate=False, rewrites=["hyde"])
    assert "no LLM is configured" in result.rewriting[0].fallback_reason and result.llm_calls == 0
    with chat_server(canned) as server:
        keyword_only = _retriever(demo_kb, server.settings())
        result = keyword_only.retrieve(QUESTION, top_k=5, modes=("bm25",), rewrites=["hyde"])
        assert "dense path" in result.rewriting[0].fallback_reason and not server.requests
        keyword_only.close()
    with pytest.raises(RetrievalError, match="unknown query rewrite"):
        retriever.retrieve(QUESTION, rewrites=["telepathy"])
    retriever.close()


# -- the LLM iteration driver --------------------------------------------------------------------
def _driver(kb, retriever, llm_settings) -> LLMDriver:
    return LLMDriver(LLMQueryRewriter(llm_settings), retriever.entity_driver,
                     lambda ids: [c.text for c in kb.chunk_index.get(ids)],
                     lambda text: [le.key for le in retriever.linker.link(text)])


def test_the_llm_driver_searches_the_next_query_it_asks_for(demo_kb):
    with chat_server(canned) as server:
        retriever = _retriever(demo_kb, None)
        result = retriever.retrieve(QUESTION, top_k=10, iterate=True, driver=_driver(demo_kb, retriever, server.settings()))
    it = result_dict(result)["trace"]["iteration"]
    assert it["driver"] == "llm" and it["llm_calls"] >= 1 and result.llm_calls == it["llm_calls"]
    second = it["rounds"][1]
    assert second["query"] == "Where was Maret Kuusik born?" and second["why"].startswith("the LLM read")
    assert {"graph@2", "bm25@2", "dense@2"} <= set(second["paths"])
    assert "maret kuusik" in second["new_entities"] or "maret kuusik" in it["rounds"][0]["new_entities"]
    assert "Passages:" in server.requests[0]["messages"][1]["content"]
    retriever.close()


def test_the_llm_driver_stops_when_the_llm_says_enough(demo_kb):
    with chat_server(lambda body: '{"enough": true, "next_query": ""}') as server:
        retriever = _retriever(demo_kb, None)
        result = retriever.retrieve(QUESTION, top_k=10, iterate=True, driver=_driver(demo_kb, retriever, server.settings()))
    assert len(result.iteration.rounds) == 1 and "enough" in result.iteration.stopped
    assert result.iteration.llm_calls == 1
    retriever.close()


def test_the_llm_driver_asks_nothing_for_a_follow_up_by_position(demo_kb):
    with chat_server(canned) as server:
        retriever = _retriever(demo_kb, None)
        driver = _driver(demo_kb, retriever, server.settings())
        nxt = retriever.retrieve("And the next one?", top_k=10, iterate=True, driver=driver, history=[Turn(QUESTION)])
        chained = retriever.retrieve("And where was it filmed?", top_k=10, iterate=True, driver=driver,
                                     history=[Turn(QUESTION)])
    assert nxt.query.completion.positional and len(nxt.iteration.rounds) == 1
    assert "by position" in nxt.iteration.stopped and nxt.iteration.llm_calls == 0
    assert chained.iteration.llm_calls >= 1 and len(server.requests) == chained.iteration.llm_calls  # none for nxt
    retriever.close()


def test_the_llm_driver_falls_back_to_the_llm_free_plan_saying_why(demo_kb):
    entity_only = demo_kb.retriever.retrieve(QUESTION, top_k=10, iterate=True)
    with chat_server(lambda body: "not json") as server:
        retriever = _retriever(demo_kb, None)
        result = retriever.retrieve(QUESTION, top_k=10, iterate=True, driver=_driver(demo_kb, retriever, server.settings()))
    it = result.iteration
    assert it.driver == "llm" and it.llm_calls == len(server.requests) >= 1
    notes = [r.why for r in it.rounds[1:]] + [it.stopped]
    assert any("LLM failed" in n and "not JSON" in n and "entities driver" in n for n in notes), notes
    assert [r.new_entities for r in it.rounds[1:]] == [r.new_entities for r in entity_only.iteration.rounds[1:]]
    retriever.close()


# -- wiring: components, the HTTP request, the eval modes ----------------------------------------
def test_components_wire_the_llm_parts_from_the_settings(tmp_path, embedder, recognizer):
    llm = LLMSettings(model="openai/x", api_base="http://127.0.0.1:9/v1", api_key="x")
    none = Components(Settings(data_dir=tmp_path / "a"), embedder=embedder, recognizer=recognizer)
    assert none.query_llm is None and none.llm_driver is None and none.retriever.query_llm is None
    settings = Settings(data_dir=tmp_path / "b", llm=llm)
    settings.retrieval.iterate_driver = "llm"
    comps = Components(settings, embedder=embedder, recognizer=recognizer)
    assert isinstance(comps.retriever.query_llm, LLMQueryRewriter)
    assert comps.retriever.driver is comps.llm_driver and comps.llm_driver.fallback is comps.retriever.entity_driver
    none.close()
    comps.close()


def test_the_request_fields_name_rewrites_and_the_driver(demo_kb):
    client = create_app(demo_kb.settings, demo_kb, warm=False).test_client()
    ok = client.post("/v1/retrieve", json={"question": QUESTION, "rewrite": ["hyde"], "iterate_driver": "entities"})
    assert ok.status_code == 200, ok.get_json()
    trace = ok.get_json()["trace"]
    assert trace["rewriting"][0]["kind"] == "hyde" and "no LLM" in trace["rewriting"][0]["fallback_reason"]
    assert trace["iteration"]["driver"] == "entities"
    bad = client.post("/v1/retrieve", json={"question": QUESTION, "rewrite": ["telepathy"]})
    assert bad.status_code == 400 and "rewrite" in json.dumps(bad.get_json())
    no_llm = client.post("/v1/retrieve", json={"question": QUESTION, "iterate_driver": "llm"})
    assert no_llm.status_code == 200, no_llm.get_json()
    it = no_llm.get_json()["trace"]["iteration"]
    notes = [r["why"] for r in it["rounds"][1:]] + [it["stopped"]]
    assert it["driver"] == "llm" and it["llm_calls"] == 0 and any("no LLM is configured" in n for n in notes), notes


def test_eval_modes_name_the_rewrites_and_report_llm_calls(tmp_path, embedder, recognizer):
    assert parse_mode("+hyde").name == "bm25+dense+graph+hyde"
    mode = parse_mode("bm25+dense+graph+rerank+stepback+decompose+iter-llm")
    assert mode.rewrites == ("decompose", "step_back") and mode.iterate == "llm"
    assert mode.name == "bm25+dense+graph+rerank+decompose+stepback+iter-llm"
    assert parse_mode("+multiquery").rewrites == ("multi_query",)
    corpus = write_jsonl(tmp_path / "c.jsonl", [
        *[{"id": r["id"], "title": r["title"], "text": r["text"]} for r in TWO_HOP],
        {"id": "other", "title": "Vormsi", "text": "Vormsi is an island with a lighthouse."}])
    queries = write_jsonl(tmp_path / "q.jsonl", [
        {"id": "q", "question": QUESTION, "answers": ["Tartu"], "gold_ids": [r["id"] for r in TWO_HOP]}])
    plain = Components(Settings(data_dir=tmp_path / "kb"), embedder=embedder, recognizer=recognizer)
    with pytest.raises(EvalConfigError, match="needs an LLM"):
        run_eval(plain, corpus, queries, modes="+hyde")
    plain.close()
    with chat_server(canned) as server:
        comps = Components(Settings(data_dir=tmp_path / "kb", llm=server.settings()), embedder=embedder,
                           recognizer=recognizer)
        report = run_eval(comps, corpus, queries, modes="bm25+dense+graph,+hyde,+decompose,+iter-llm", answers=False)
        comps.close()
    assert report.mode("bm25+dense+graph").llm_calls == 0.0
    assert report.mode("bm25+dense+graph+hyde").llm_calls == 1.0
    row = report.per_query[0]["modes"]["bm25+dense+graph+decompose"]
    assert [q["text"] for q in row["rewriting"][0]["queries"]] == SUB_QUESTIONS
    iterated = report.mode("bm25+dense+graph+iter-llm")
    assert iterated.llm_calls >= 1 and iterated.rounds >= 1
    assert "LLM calls per question" in report.markdown()
