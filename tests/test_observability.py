"""Request logs (one JSON line per request, with the request id), X-Request-Id, /metrics."""

from __future__ import annotations

import io
import json

import pytest

from kgrag.server.app import create_app


@pytest.fixture(scope="module")
def logged(demo_kb):
    log = io.StringIO()
    app = create_app(demo_kb.settings, demo_kb, log_stream=log)
    return app.test_client(), log


def _lines(log: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in log.getvalue().splitlines() if line.strip()]


def _line_of(log, request_id: str) -> dict:
    found = [line for line in _lines(log) if line["request_id"] == request_id]
    assert len(found) == 1, log.getvalue()[-2000:]
    return found[0]


def test_a_query_logs_one_json_line_with_the_request_id_sent(logged):
    client, log = logged
    resp = client.post("/v1/query", json={"question": "How is the LCA computed?"}, headers={"X-Request-Id": "req-42.a"})
    assert resp.status_code == 200
    assert resp.headers["X-Request-Id"] == "req-42.a" and resp.get_json()["trace_id"] == "req-42.a"
    line = _line_of(log, "req-42.a")
    assert line["route"] == "/v1/query" and line["method"] == "POST" and line["status"] == 200
    assert line["latency_ms"] > 0 and line["level"] == "INFO" and line["ts"]
    assert {"link", "dense", "bm25", "graph", "fusion", "total"} <= set(line["stages_ms"])
    assert line["abstained"] is False and line["linked_entities"] >= 1


def test_a_streamed_answer_is_logged_once_after_its_last_event(logged):
    client, log = logged
    resp = client.post("/v1/query", json={"question": "What is the boiling point of nitrogen on Neptune?", "stream": True},
                       headers={"X-Request-Id": "stream-1"})
    body = resp.get_data(as_text=True)
    resp.close()
    assert '"trace_id": "stream-1"' in body
    line = _line_of(log, "stream-1")
    assert line["abstained"] is True and line["status"] == 200 and "stages_ms" in line


def test_request_ids_are_made_when_missing_or_unsafe_and_errors_are_logged(logged):
    client, log = logged
    made = client.get("/healthz").headers["X-Request-Id"]
    assert len(made) == 32
    unsafe = client.get("/healthz", headers={"X-Request-Id": 'x" {"forged": 1}'}).headers["X-Request-Id"]
    assert unsafe != 'x" {"forged": 1}' and len(unsafe) == 32
    bad = client.post("/v1/query", json={"question": ""}, headers={"X-Request-Id": "bad-1"})
    assert bad.status_code == 400 and bad.headers["X-Request-Id"] == "bad-1"
    assert _line_of(log, "bad-1")["status"] == 400
    assert _line_of(log, made)["route"] == "/healthz"
    assert all(set(line) >= {"ts", "level", "request_id", "route", "status", "latency_ms"} for line in _lines(log))


def test_metrics_have_process_metrics_and_one_charset(logged):
    client, _ = logged
    client.post("/v1/retrieve", json={"question": "Glass Harbor"})
    resp = client.get("/metrics")
    content_type = resp.headers["Content-Type"]
    assert content_type.startswith("text/plain;") and content_type.count("charset") == 1, content_type
    text = resp.get_data(as_text=True)
    for name in ("process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds",
                 "python_info", "kgrag_http_requests_total", "kgrag_retrieval_stage_ms_bucket"):
        assert f"\n{name}" in text, name
