"""The HTTP API over the demo knowledge base, through Flask's test client (the real app, real
stores and models), plus one real `kgrag serve` process."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from kgrag.server.app import create_app

KEY = "test-admin-key"


@pytest.fixture(scope="module")
def client(demo_kb):
    settings = demo_kb.settings.model_copy(
        update={"server": demo_kb.settings.server.model_copy(update={"api_key": KEY})}
    )
    return create_app(settings, demo_kb).test_client()


@pytest.fixture
def admin_client(components):
    """A fresh, writable knowledge base (documents routes change it)."""
    settings = components.settings.model_copy(
        update={"server": components.settings.server.model_copy(update={"api_key": KEY})}
    )
    return create_app(settings, components).test_client()


def _error(resp, status: int, code: str) -> str:
    assert resp.status_code == status, resp.get_data(as_text=True)
    body = resp.get_json()
    assert body["error"]["code"] == code
    return body["error"]["message"]


def test_query_answers_with_a_citation_to_the_right_chunk(client):
    resp = client.post("/v1/query", json={"question": "Which manuscripts are known as the Books of Clanranald?"})
    assert resp.status_code == 200
    body = resp.get_json()
    assert not body["abstained"] and body["mode"] == "extractive"
    assert body["citations"], body
    cited = body["citations"][0]
    assert cited["title"] == "Books of Clanranald"
    assert f"[{cited['n']}]" in body["answer"]
    assert cited["chunk_id"] in {h["chunk_id"] for h in body["hits"]}
    assert cited["snippet"] and cited["snippet"] in next(
        h["text"] for h in body["hits"] if h["chunk_id"] == cited["chunk_id"]) or cited["snippet"]
    trace = body["trace"]
    assert set(trace["timings_ms"]) >= {"link", "dense", "bm25", "graph", "fusion", "total"}
    assert trace["reranker"] is None
    assert body["hits"][0]["trace"]["paths"]


def test_unanswerable_question_abstains(client):
    body = client.post("/v1/query", json={"question": "What is the boiling point of liquid nitrogen on Neptune?"}).get_json()
    assert body["abstained"] and body["citations"] == []
    assert "does not" in body["answer"]


def test_two_hop_trace_shows_the_entity_path(client):
    body = client.post("/v1/retrieve", json={"question": "In which city was the director of Glass Harbor born?",
                                             "top_k": 5}).get_json()
    assert [e["key"] for e in body["trace"]["linked_entities"]] == ["glass harbor"]
    hit = next(h for h in body["hits"] if h["doc_id"] == "person-maret-kuusik")
    assert ["glass harbor", "maret kuusik"] in [p["nodes"] for p in hit["trace"]["graph_paths"]]
    # Fusion says why it is there: the bridge of the film the question names.
    placed = hit["trace"]["placed_by"]
    assert placed["rule"] == "bridge" and placed["entity"] == "glass harbor" and placed["page_of"] == "maret kuusik"
    assert hit["chunk_id"] in body["trace"]["evidence_set"]
    assert body["trace"]["path_weights"]["graph"] == 1.0 and body["trace"]["path_weight_reasons"] == {}


def test_alias_question_over_http(client):
    body = client.post("/v1/query", json={"question": "How is the LCA computed?", "top_k": 5}).get_json()
    assert body["trace"]["linked_entities"][0]["name"] in ("Lowest Common Ancestor", "LCA")
    assert "最近公共祖先" in body["trace"]["expansions"]
    assert any(h["doc_id"].endswith("zuijin_gonggong_zuxian.md") for h in body["hits"])


def test_streaming_query_sends_retrieval_then_answer_events(client):
    resp = client.post("/v1/query", json={"question": "最近公共祖先是什么？", "stream": True})
    assert resp.status_code == 200 and resp.mimetype == "text/event-stream"
    events = [block for block in resp.get_data(as_text=True).split("\n\n") if block.strip()]
    names = [e.split("\n")[0].removeprefix("event: ") for e in events]
    assert names[0] == "retrieval" and names[-1] == "answer"
    final = json.loads(events[-1].split("\n", 1)[1].removeprefix("data: "))
    assert final["answer"]["citations"] and "最近公共祖先" in final["answer"]["text"]


@pytest.mark.parametrize(
    ("kwargs", "status", "code", "mentions"),
    [
        ({"data": "{not json", "content_type": "application/json"}, 400, "invalid_json", "JSON"),
        ({"json": {}}, 400, "invalid_request", "question"),
        ({"json": {"question": ""}}, 400, "invalid_request", "question"),
        ({"json": {"question": "x", "top_k": 10**6}}, 400, "invalid_request", "top_k"),
        ({"json": {"question": "x", "modes": ["sparse"]}}, 400, "invalid_request", "sparse"),
        ({"json": {"question": "x", "filters": {"colour": "red"}}}, 400, "invalid_request", "colour"),
        ({"json": {"question": "x", "surprise": 1}}, 400, "invalid_request", "surprise"),
        ({"json": ["question"]}, 400, "invalid_request", "object"),
        ({"data": "question=x", "content_type": "text/plain"}, 415, "unsupported_media_type", "JSON"),
        ({"data": "x" * (10 * 1024 * 1024), "content_type": "application/json"}, 413, "request_too_large", "bytes"),
    ],
)
def test_bad_requests_get_json_errors(client, kwargs, status, code, mentions):
    message = _error(client.post("/v1/query", **kwargs), status, code)
    assert mentions in message


BAD_HISTORY = [
    ("Where is it?", "history: Input should be a valid list"),
    (["Where is it?"], "history.0: Input should be a valid dictionary"),
    ([{"q": "Where is it?"}], "history.0.question: Field required"),
    ([{"question": ""}], "history.0.question"),
    ([{"question": "   "}], "history.0.question"),
    ([{"question": "x", "answer": 5}], "history.0.answer"),
    ([{"question": "x", "answer": "a" * 8001}], "history.0.answer: String should have at most 8000"),
    ([{"question": "x" * 4001}], "history.0.question: String should have at most 4000"),
    ([{"question": "x"}] * 21, "history: List should have at most 20 items"),
    ([{"question": "x", "asked_at": 1}], "history.0.asked_at"),
]


@pytest.mark.parametrize(("history", "mentions"), BAD_HISTORY, ids=[repr(h)[:40] for h, _ in BAD_HISTORY])
def test_bad_history_is_400_naming_the_field(client, history, mentions):
    for route in ("/v1/retrieve", "/v1/query"):
        message = _error(client.post(route, json={"question": "And the next one?", "history": history}),
                         400, "invalid_request")
        assert mentions in message, message


def test_follow_up_over_http_is_completed_from_history_and_traced(client):
    previous = "Which manuscripts are known as the Books of Clanranald?"
    body = client.post("/v1/query", json={"question": "And who kept them?",
                                          "history": [{"question": previous, "answer": "Two manuscripts."}]})
    assert body.status_code == 200, body.get_data(as_text=True)
    trace = body.get_json()["trace"]
    assert trace["conversation"]["followup"] is True
    assert trace["conversation"]["carried_from"] == [previous]
    assert trace["conversation"]["completed_question"] == previous + " kept"
    assert body.get_json()["citations"][0]["title"] == "Books of Clanranald"
    alone = client.post("/v1/retrieve", json={"question": "And who kept them?"}).get_json()
    assert alone["trace"]["conversation"] is None
    standalone = client.post("/v1/retrieve", json={"question": previous, "history": [{"question": "Hi?"}]}).get_json()
    assert standalone["trace"]["conversation"]["followup"] is False
    assert standalone["trace"]["conversation"]["completed_question"] == previous


def test_conversation_id_keeps_turns_server_side_and_expires_as_configured(demo_kb, tmp_path):
    server = demo_kb.settings.server.model_copy(update={"conversation_ttl_s": 1.0})
    settings = demo_kb.settings.model_copy(update={"server": server, "data_dir": tmp_path})
    client = create_app(settings, demo_kb, warm=False).test_client()
    previous = "Which manuscripts are known as the Books of Clanranald?"
    first = client.post("/v1/query", json={"question": previous, "conversation_id": "thread-1"}).get_json()
    assert first["conversation_id"] == "thread-1"
    assert first["trace"]["conversation"] is None  # a new conversation: no history yet
    second = client.post("/v1/retrieve", json={"question": "And who kept them?", "conversation_id": "thread-1"})
    conversation = second.get_json()["trace"]["conversation"]
    assert conversation["followup"] and conversation["carried_from"] == [previous]
    assert (tmp_path / "conversations.sqlite").exists()
    time.sleep(1.2)
    expired = client.post("/v1/retrieve", json={"question": "And who kept them?", "conversation_id": "thread-1"})
    assert expired.get_json()["trace"]["conversation"] is None  # idle past the TTL: no history left
    both = client.post("/v1/retrieve", json={"question": "x", "conversation_id": "t", "history": [{"question": "y"}]})
    assert "not both" in _error(both, 400, "invalid_request")
    bad = client.post("/v1/retrieve", json={"question": "x", "conversation_id": "no spaces allowed"})
    assert "conversation_id" in _error(bad, 400, "invalid_request")


# Every combination of retrieval paths, and no "modes" at all (the default: every path).
MODE_SETS = [None, ["dense"], ["bm25"], ["graph"], ["dense", "bm25"], ["dense", "graph"], ["bm25", "graph"],
             ["dense", "bm25", "graph"]]
BAD_FILTERS = [
    ({"source": 5}, "filters.source: expected a string, got int 5"),
    ({"doc_id": 5}, "filters.doc_id: expected a document id"),
    ({"doc_id": ["film-glass-harbor", 5]}, "filters.doc_id.1"),
    ({"doc_id": []}, "filters.doc_id: an empty list matches nothing"),
    ({"section_path_prefix": ["Guide"]}, "filters.section_path_prefix: expected a string"),
    ({"source": None}, "filters.source: null"),
    ({"bogus": "x"}, "unknown filter key(s) 'bogus'"),
    ("doc_id=x", "filters: expected an object"),
    (["film-glass-harbor"], "filters: expected an object"),
    ({"date_from": "2023-13-01"}, "filters.date_from: expected an ISO date YYYY-MM-DD"),
    ({"date_to": "2023"}, "filters.date_to: expected an ISO date YYYY-MM-DD"),
    ({"date_from": 2023}, "filters.date_from: expected an ISO date string"),
    ({"language": []}, "filters.language: an empty list matches nothing"),
    ({"tags": ["ok", 5]}, "filters.tags.1"),
    ({"doc_type": {"pdf": True}}, "filters.doc_type: expected a string or a non-empty list of strings"),
]


@pytest.mark.parametrize(("filters", "mentions"), BAD_FILTERS, ids=[repr(f) for f, _ in BAD_FILTERS])
def test_bad_filters_are_400_naming_the_field_on_every_mode(client, filters, mentions):
    """Parsed once in the request schema: no path (graph-only included) ever sees them."""
    for route in ("/v1/retrieve", "/v1/query"):
        for modes in MODE_SETS:
            body = {"question": "Who directed Glass Harbor?", "filters": filters}
            if modes is not None:
                body["modes"] = modes
            message = _error(client.post(route, json=body), 400, "invalid_request")
            assert mentions in message, (route, modes, message)


def test_graph_only_queries_apply_valid_filters(client):
    question = "Who directed Glass Harbor?"
    unfiltered = client.post("/v1/retrieve", json={"question": question, "modes": ["graph"]}).get_json()
    assert {"film-glass-harbor", "person-maret-kuusik"} <= {h["doc_id"] for h in unfiltered["hits"]}
    for filters in ({"doc_id": "person-maret-kuusik"}, {"doc_id": ["person-maret-kuusik", "no-such-doc"]}):
        resp = client.post("/v1/retrieve", json={"question": question, "modes": ["graph"], "filters": filters})
        assert resp.status_code == 200
        hits = resp.get_json()["hits"]
        assert hits and {h["doc_id"] for h in hits} == {"person-maret-kuusik"}
        assert all("graph" in h["trace"]["paths"] for h in hits)
    # A valid filter that matches nothing is an empty answer, not an error; so is a reversed
    # date range (valid by the request schema, which cannot order two fields).
    for filters in ({"section_path_prefix": "no such section"}, {"date_from": "2024-01-01", "date_to": "2023-01-01"}):
        for modes in (["graph"], None):
            body = {"question": question, "filters": filters, **({"modes": modes} if modes else {})}
            resp = client.post("/v1/retrieve", json=body)
            assert resp.status_code == 200 and resp.get_json()["hits"] == [], (filters, modes)


def test_routes_methods_and_admin_keys(client):
    _error(client.get("/v1/nowhere"), 404, "not_found")
    _error(client.get("/v1/query"), 405, "method_not_allowed")
    assert "API key" in _error(client.get("/v1/documents"), 401, "unauthorized")
    _error(client.get("/v1/documents", headers={"X-API-Key": "wrong"}), 401, "unauthorized")
    _error(client.delete("/v1/documents/film-glass-harbor"), 401, "unauthorized")
    listed = client.get("/v1/documents", headers={"Authorization": f"Bearer {KEY}"}).get_json()
    assert "film-glass-harbor" in {d["id"] for d in listed["documents"]}
    # After every bad request the server still serves.
    assert client.get("/healthz").get_json() == {"status": "ok"}
    assert client.post("/v1/retrieve", json={"question": "Glass Harbor"}).status_code == 200


def test_admin_routes_are_off_without_a_configured_key(demo_kb):
    app = create_app(demo_kb.settings, demo_kb, warm=False)  # settings carry no api_key
    message = _error(app.test_client().get("/v1/documents", headers={"X-API-Key": "anything"}), 403, "admin_disabled")
    assert "KGRAG_SERVER__API_KEY" in message


def test_entities_routes(client):
    found = client.get("/v1/entities?q=LCA").get_json()["entities"]
    lca = next(e for e in found if e["key"] == "lowest common ancestor")
    assert "最近公共祖先" in lca["aliases"] and lca["curated"]
    detail = client.get("/v1/entities/glass harbor").get_json()
    assert "maret kuusik" in {n["key"] for n in detail["neighbours"]}
    assert detail["chunks"] and detail["chunks"][0]["chunk_id"].startswith("film-glass-harbor")
    _error(client.get("/v1/entities/no such entity"), 404, "not_found")
    _error(client.get("/v1/entities"), 400, "invalid_request")
    _error(client.get("/v1/entities?q=x&limit=1000000"), 400, "invalid_request")


def test_readyz_and_metrics(client):
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.get_json()["status"] == "ready"
    assert ready.get_json()["documents"] >= 30
    metrics = client.get("/metrics").get_data(as_text=True)
    assert "kgrag_http_requests_total" in metrics and "kgrag_retrieval_stage_ms_bucket" in metrics
    page = client.get("/")
    assert page.status_code == 200 and b'src="/static/js/main.js"' in page.data
    # Every module the page imports is served (the browser tests drive the page itself).
    import re

    pending, seen = ["main.js"], set()
    while pending:
        name = pending.pop()
        seen.add(name)
        module = client.get(f"/static/js/{name}")
        assert module.status_code == 200, name
        pending += [m for m in re.findall(r'from "\./([\w.]+)"', module.get_data(as_text=True)) if m not in seen]
    assert {"api.js", "answer.js", "trace.js", "explorer.js", "feedback.js", "i18n.js"} <= seen
    assert b"/v1/query" in client.get("/static/js/api.js").data


def test_documents_add_query_delete(admin_client):
    headers = {"X-API-Key": KEY}
    doc = {"id": "notes/heap", "title": "Binary heap", "format": "md",
           "text": "# Binary heap\n\nA binary heap keeps the smallest key at its root; push and pop take O(log n)."}
    resp = admin_client.post("/v1/documents", json={"documents": [doc]}, headers=headers)
    assert resp.status_code == 201, resp.get_json()
    assert resp.get_json()["documents"]["new"] == 1
    again = admin_client.post("/v1/documents", json={"documents": [doc]}, headers=headers)
    assert again.status_code == 200 and again.get_json()["documents"]["unchanged"] == 1

    upload = {"file": (io.BytesIO(b"# Trie\n\nA trie stores strings by their prefixes."), "trie.md")}
    resp = admin_client.post("/v1/documents", data=upload, headers=headers, content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    bad = {"file": (io.BytesIO(b"\x00\x01"), "slides.pptx")}
    message = _error(admin_client.post("/v1/documents", data=bad, headers=headers,
                                       content_type="multipart/form-data"), 400, "no_documents")
    assert "pptx" in message

    ids = {d["id"] for d in admin_client.get("/v1/documents", headers=headers).get_json()["documents"]}
    assert ids == {"notes/heap", "uploads/trie.md"}
    hits = admin_client.post("/v1/retrieve", json={"question": "What does a binary heap keep at its root?"}).get_json()["hits"]
    assert hits[0]["doc_id"] == "notes/heap"

    assert admin_client.delete("/v1/documents/notes/heap", headers=headers).get_json() == {"deleted": "notes/heap"}
    _error(admin_client.delete("/v1/documents/notes/heap", headers=headers), 404, "not_found")
    hits = admin_client.post("/v1/retrieve", json={"question": "What does a binary heap keep at its root?"}).get_json()["hits"]
    assert all(h["doc_id"] != "notes/heap" for h in hits)
    bad_doc = {"documents": [{"id": "x", "text": "y", "format": "pdf"}]}
    assert "format" in _error(admin_client.post("/v1/documents", json=bad_doc, headers=headers), 400, "invalid_request")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_kgrag_serve_binds_localhost_and_answers(tmp_path):
    port = _free_port()
    env = {**os.environ, "KGRAG_DATA_DIR": str(tmp_path / "kb")}
    proc = subprocess.Popen([sys.executable, "-m", "kgrag.cli", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    assert json.load(r)["status"] == "ready"
                    break
            except OSError:
                assert proc.poll() is None, proc.stdout.read()
                assert time.monotonic() < deadline, "server did not become ready in 120 s"
                time.sleep(0.5)
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/query", data=b'{"question": "anything?"}',
                                     headers={"Content-Type": "application/json", "X-Request-Id": "serve-test-1"})
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.headers["X-Request-Id"] == "serve-test-1"
            assert json.load(r)["abstained"] is True  # an empty knowledge base knows nothing
        listening = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True).stdout
        local_addresses = [line.split()[3] for line in listening.splitlines() if line.strip()]
        if local_addresses:  # `ss` present: the only listener is on the loopback interface
            assert local_addresses == [f"127.0.0.1:{port}"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    lines = [json.loads(line) for line in proc.stdout.read().splitlines() if line.startswith("{")]
    logged = [line for line in lines if line.get("request_id") == "serve-test-1"]
    assert len(logged) == 1 and logged[0]["route"] == "/v1/query" and logged[0]["abstained"] is True, lines


def test_extractive_answer_reads_alias_expansions(client):
    """"LCA" in the question, "lowest common ancestor" in the definition: the answerer counts the
    linked entity's other names as question terms, so the definition is quoted."""
    body = client.post("/v1/query", json={"question": "What is the LCA of two nodes in a tree?"}).get_json()
    assert "lowest common ancestor of two nodes" in body["answer"]
    assert body["citations"] and not body["abstained"]
