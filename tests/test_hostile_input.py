"""Hostile and broken input over HTTP (issue 12): every case answers with the right status, a
JSON error naming the problem and carrying the request id, and the server keeps serving.
The real app over real embedded stores and the shipped models (Flask's test client)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from kgrag.components import Components
from kgrag.server.app import create_app

KEY = "hostile-test-key"
ADMIN = {"X-API-Key": KEY}


def _with_key(settings):
    return settings.model_copy(update={"server": settings.server.model_copy(update={"api_key": KEY})})


@pytest.fixture(scope="module")
def served(demo_kb):
    log = io.StringIO()
    app = create_app(_with_key(demo_kb.settings), demo_kb, warm=False, log_stream=log)
    return app.test_client(), log


@pytest.fixture
def admin_client(components):
    return create_app(_with_key(components.settings), components, warm=False).test_client()


def _error(resp, status: int, code: str) -> dict:
    """The error object, after checking status, code, and that the body's request id is the
    response's X-Request-Id."""
    assert resp.status_code == status, resp.get_data(as_text=True)[:500]
    error = resp.get_json()["error"]
    assert error["code"] == code, error
    assert error["request_id"] and error["request_id"] == resp.headers["X-Request-Id"], error
    return error


def _still_serving(client) -> None:
    assert client.get("/healthz").get_json() == {"status": "ok"}
    resp = client.post("/v1/retrieve", json={"question": "Who directed Glass Harbor?", "top_k": 3})
    assert resp.status_code == 200 and resp.get_json()["hits"]


# -- errors by cause -------------------------------------------------------------------------
def test_every_error_body_carries_the_request_id(served):
    client, _ = served
    for resp, status, code in [
        (client.get("/v1/nowhere"), 404, "not_found"),
        (client.get("/v1/query"), 405, "method_not_allowed"),
        (client.post("/v1/query", json={}), 400, "invalid_request"),
        (client.get("/v1/documents"), 401, "unauthorized"),
        (client.post("/v1/query", data="{", content_type="application/json"), 400, "invalid_json"),
    ]:
        _error(resp, status, code)
    given = client.post("/v1/query", json={}, headers={"X-Request-Id": "client-chosen-7"})
    assert _error(given, 400, "invalid_request")["request_id"] == "client-chosen-7"


def _corrupt_knowledge_base(settings, embedder, recognizer, keep_header: bool) -> Components:
    comps = Components(settings, embedder=embedder, recognizer=recognizer)
    from kgrag.ingest.loaders.base import content_hash
    from kgrag.types import Document

    text = "The Vormsi lighthouse keeper logs the weather every morning at six."
    comps.ingest_job().run_documents([Document(id="d1", source="d1", title="Log", text=text,
                                               hash=content_hash("Log", text, "txt"), format="txt")])
    comps.close()
    files = sorted(Path(settings.data_dir).glob("*.sqlite"))
    assert files, list(Path(settings.data_dir).iterdir())
    for path in files:  # what a disk fault or a stray write leaves
        data = path.read_bytes()
        # keep_header: the file still opens as SQLite, its pages are garbage ("database disk
        # image is malformed" on the first search); else not a database at all.
        head = data[:4096] if keep_header else b""
        path.write_bytes(head + os.urandom(len(data) - len(head)))
    return Components(settings, embedder=embedder, recognizer=recognizer)


@pytest.mark.parametrize("keep_header", [True, False], ids=["malformed-pages", "not-a-database"])
def test_a_broken_store_is_503_not_400_and_shows_no_server_path(settings, embedder, recognizer, keep_header):
    """Before: 400 invalid_request "database disk image is malformed" (a store failure blamed
    on the question) or 500 internal_error."""
    comps = _corrupt_knowledge_base(settings, embedder, recognizer, keep_header)
    try:
        client = create_app(_with_key(settings), comps, warm=False).test_client()
        for route in ("/v1/retrieve", "/v1/query"):
            for modes in (["bm25"], ["dense"], ["graph"], None):
                body = {"question": "When does the lighthouse keeper log the weather?"}
                if modes:
                    body["modes"] = modes
                error = _error(client.post(route, json=body), 503, "store_unavailable")
                assert error["request_id"] in error["message"]
                assert str(settings.data_dir) not in error["message"] and "/" not in error["message"]
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert str(settings.data_dir) not in ready.get_data(as_text=True)
        assert client.get("/healthz").status_code == 200
    finally:
        comps.close()


# -- input limits ----------------------------------------------------------------------------
@pytest.mark.parametrize("body", ["[" * 100_000, '{"question": "x", "filters": ' + "[" * 5000 + "]" * 5000 + "}",
                                  '{"question": "x", "top_k": ' + '{"a":' * 40 + "1" + "}" * 40 + "}"],
                         ids=["100k-brackets", "5k-deep-filters", "40-deep-object"])
def test_deeply_nested_json_is_a_400(served, body):
    """Before: 100k nested "[" was a 500 RecursionError."""
    from kgrag.server.routes.feedback import MAX_BODY_BYTES

    client, _ = served
    for route in ("/v1/query", "/v1/retrieve", "/v1/feedback"):
        if route == "/v1/feedback" and len(body) > MAX_BODY_BYTES:  # refused for its size first
            _error(client.post(route, data=body, content_type="application/json"), 413, "request_too_large")
            continue
        error = _error(client.post(route, data=body, content_type="application/json"), 400, "invalid_json")
        assert "nests deeper than" in error["message"]
    _still_serving(client)


@pytest.mark.parametrize(("field", "value"), [("top_k", "5"), ("top_k", 5.5), ("top_k", True),
                                               ("rerank", "false"), ("rerank", 0), ("stream", "yes"),
                                               ("stream", 1)])
def test_numbers_and_flags_are_not_coerced(served, field, value):
    """Before: "top_k": "5" and "stream": "yes" were silently coerced."""
    client, _ = served
    route = "/v1/query"
    error = _error(client.post(route, json={"question": "Glass Harbor", field: value}), 400, "invalid_request")
    assert error["message"].startswith(field), error


def test_an_integral_number_is_an_integer(served):
    """JSON Schema's "integer" (what the API document says) includes 5.0."""
    client, _ = served
    resp = client.post("/v1/retrieve", json={"question": "Glass Harbor", "top_k": 2.0})
    assert resp.status_code == 200 and len(resp.get_json()["hits"]) == 2


def test_the_api_document_says_the_types_the_server_enforces(served):
    client, _ = served
    spec = client.get("/openapi.json").get_json()
    props = spec["components"]["schemas"]["QueryRequest"]["properties"]
    assert [t["type"] for t in props["top_k"]["anyOf"]] == ["integer", "null"]
    assert props["stream"]["type"] == "boolean" and props["rerank"]["type"] == "boolean"
    errors = spec["components"]["schemas"]["ErrorDetail"]
    assert "request_id" in errors["required"]
    assert "503" in spec["paths"]["/v1/query"]["post"]["responses"]


def test_made_up_http_methods_do_not_grow_the_metrics(served):
    """Before: 5,000 made-up methods added 5,000 series (42 KB → 976 KB)."""
    client, _ = served
    before = client.get("/metrics").get_data(as_text=True)
    for i in range(300):
        resp = client.open("/v1/query", method=f"BREW{i}")
        assert resp.status_code == 405
    after = client.get("/metrics").get_data(as_text=True)
    assert "BREW" not in after
    assert 'method="other"' in after
    assert len(after) - len(before) < 2_000, (len(before), len(after))


def test_a_secret_in_the_query_string_is_never_logged(served):
    client, log = served
    secret = "sk-live-do-not-log-0123456789"
    resp = client.post(f"/v1/retrieve?api_key={secret}&token={secret}", json={"question": "Glass Harbor"},
                       headers={"X-Request-Id": "secret-probe"})
    assert resp.status_code == 200
    client.get(f"/v1/documents?api_key={secret}")
    lines = [json.loads(line) for line in log.getvalue().splitlines() if line.startswith("{")]
    assert any(line.get("request_id") == "secret-probe" for line in lines)
    assert secret not in log.getvalue()


def _upload(client, *files: tuple[bytes, str]):
    data = {"file": [(io.BytesIO(content), name) for content, name in files]}
    return client.post("/v1/documents", data=data, headers=ADMIN, content_type="multipart/form-data")


def _uploads_folder(client) -> Path:
    return Path(client.application.config["KGRAG_SETTINGS"].data_dir) / "uploads"


def _stored(client) -> set[str]:
    folder = _uploads_folder(client)
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def _document_ids(client) -> set[str]:
    return {d["id"] for d in client.get("/v1/documents", headers=ADMIN).get_json()["documents"]}


def test_deeply_nested_html_and_markdown_uploads_are_ingested_or_reported(admin_client):
    """Before: HTML nested 500 deep was a 500 on upload (RecursionError in the HTML walk)."""
    html = ("<html><body>" + "<div>" * 5000 + "<p>The abyssal lantern fish glows green.</p>"
            + "</div>" * 5000 + "</body></html>").encode()
    markdown = ("> " * 3000 + "Deep quote.\n\n" + "".join("  " * i + "- level\n" for i in range(400))
                + "\nThe abyssal lantern fish eats krill.\n").encode()
    resp = _upload(admin_client, (html, "deep.html"), (markdown, "deep.md"))
    assert resp.status_code == 201, resp.get_json()
    assert resp.get_json()["failed"] == []
    assert {"uploads/deep.html", "uploads/deep.md"} <= _document_ids(admin_client)
    hits = admin_client.post("/v1/retrieve", json={"question": "What colour does the abyssal lantern fish glow?",
                                                   "modes": ["bm25"]}).get_json()["hits"]
    assert hits and hits[0]["doc_id"] == "uploads/deep.html"
    # A record file nested past any parser's limit is reported by name, not a 500.
    error = _error(_upload(admin_client, (b"[" * 100_000 + b"\n", "deep.jsonl")), 400, "no_documents")
    assert "deep.jsonl" in error["message"] and "nested too deeply" in error["message"]
    assert "deep.jsonl" not in _stored(admin_client)
    assert admin_client.get("/healthz").get_json() == {"status": "ok"}


def test_unicode_upload_names_are_kept_and_paths_stripped(admin_client):
    """Before: 中文.md was refused as "unsupported file type ''"; "team a/notes.md" and
    "team_a_notes.md" were both stored as team_a_notes.md, each replacing the other."""
    resp = _upload(admin_client, ("# 最近公共祖先\n\n树中两个节点的最近公共祖先。".encode(), "中文.md"),
                   (b"# Team A\n\nTeam A meets on Mondays.", "team a/notes.md"),
                   (b"# Team A notes\n\nThe flat file says Tuesdays.", "team_a_notes.md"),
                   (b"# Escape\n\nNothing escapes the uploads folder.", "../../../escape.md"))
    assert resp.status_code == 201, resp.get_json()
    assert resp.get_json()["failed"] == []
    ids = _document_ids(admin_client)
    assert {"uploads/中文.md", "uploads/notes.md", "uploads/team_a_notes.md", "uploads/escape.md"} <= ids
    assert _stored(admin_client) == {"中文.md", "notes.md", "team_a_notes.md", "escape.md"}
    assert not (Path(admin_client.application.config["KGRAG_SETTINGS"].data_dir).parent / "escape.md").exists()


def test_two_files_of_one_upload_with_one_name_are_refused(admin_client):
    resp = _upload(admin_client, (b"# A\n\nAlpha team notes.", "a/notes.md"), (b"# B\n\nBeta team notes.", "b/notes.md"))
    assert resp.status_code == 201
    failed = resp.get_json()["failed"]
    assert [f["path"] for f in failed] == ["b/notes.md"] and "notes.md" in failed[0]["reason"]
    assert (_uploads_folder(admin_client) / "notes.md").read_bytes() == b"# A\n\nAlpha team notes."


def test_failed_uploads_leave_nothing_behind_and_keep_the_old_version(admin_client):
    good = b"# Heap\n\nA binary heap keeps the smallest key at its root."
    assert _upload(admin_client, (good, "heap.md")).status_code == 201
    # An empty file fails to load: refused, and the stored copy of heap.md is untouched.
    error = _error(_upload(admin_client, (b"", "heap.md"), (b"\x00\x01", "slides.pptx")), 400, "no_documents")
    assert "heap.md" in error["message"] and "pptx" in error["message"]
    assert str(admin_client.application.config["KGRAG_SETTINGS"].data_dir) not in error["message"]
    assert _stored(admin_client) == {"heap.md"}
    assert (_uploads_folder(admin_client) / "heap.md").read_bytes() == good
    assert _document_ids(admin_client) == {"uploads/heap.md"}
    hits = admin_client.post("/v1/retrieve", json={"question": "What does a binary heap keep at its root?"})
    assert hits.get_json()["hits"][0]["doc_id"] == "uploads/heap.md"


# -- issue 47: input edges -------------------------------------------------------------------
SURROGATE = "\udfff"


@pytest.mark.parametrize(("route", "body", "field"), [
    ("/v1/query", {"question": f"Glass Harbor {SURROGATE}"}, "question"),
    ("/v1/query", {"question": "Glass Harbor", "filters": {"tags": ["a", SURROGATE]}}, "filters.tags.1"),
    ("/v1/retrieve", {"question": "Glass Harbor", "filters": {"source": SURROGATE}}, "filters.source"),
    ("/v1/retrieve", {"question": "x", "history": [{"question": "y", "answer": SURROGATE}]}, "history.0.answer"),
    ("/v1/feedback", {"rating": "helpful", "question": "q", "comment": SURROGATE}, "comment"),
    ("/v1/documents", {"documents": [{"id": "d", "text": "t", "metadata": {"tag": SURROGATE}}]},
     "documents.0.metadata.tag"),
    ("/v1/documents", {"documents": [{"id": "d", "text": "t", "metadata": {SURROGATE: "x"}}]},
     "documents.0.metadata (a key)"),
    ("/v1/entities/LCA/aliases", {"aliases": [f"least {SURROGATE}"]}, "aliases.0"),
    ("/v1/entities/_merge", {"keep": SURROGATE, "drop": ["x"]}, "keep"),
], ids=["question", "filter-tag", "filter-source", "history", "feedback", "metadata-value", "metadata-key",
        "alias", "merge"])
def test_a_lone_surrogate_is_a_400_naming_the_field_on_every_route(served, route, body, field):
    """Before: lone surrogates in filters, metadata, tags or aliases answered 500, or 503
    store_unavailable with the exception's text."""
    client, _ = served
    data = json.dumps(body)  # ensure_ascii: the surrogate travels as the escape "\udfff"
    resp = client.post(route, data=data, content_type="application/json", headers=ADMIN)
    error = _error(resp, 400, "invalid_request")
    assert error["message"].startswith(f"{field}: contains a lone surrogate (U+DFFF)"), error
    _still_serving(client)


def test_control_characters_are_refused_in_document_ids_and_aliases(admin_client):
    """Before: NUL and ESC were accepted in document ids and aliases."""
    resp = admin_client.post("/v1/documents", json={"documents": [{"id": "doc\u0000one", "text": "Some text."}]},
                             headers=ADMIN)
    error = _error(resp, 400, "invalid_request")
    assert error["message"].startswith("documents.0.id") and "U+0000" in error["message"], error
    assert _document_ids(admin_client) == set()
    resp = admin_client.post("/v1/entities/Heap/aliases", json={"aliases": ["binary\u001bheap"]}, headers=ADMIN)
    assert "U+001B" in _error(resp, 400, "invalid")["message"]
    csv = "canonical,type,aliases\nHeap,CONCEPT,min\u0000heap\n".encode()
    resp = admin_client.post("/v1/entities/_import", data=csv, content_type="text/csv", headers=ADMIN)
    assert "U+0000" in _error(resp, 400, "invalid")["message"]
    assert admin_client.get("/v1/entities/_aliases", headers=ADMIN).get_json()["entities"] == []


def test_a_windows_style_upload_name_keeps_its_last_component(admin_client):
    """Before: ``C:\\Windows\\x.md`` (as old browsers send a file's path) was stored as
    ``C:Windowsx.md``."""
    resp = _upload(admin_client, (b"# Tides\n\nThe tide tables are printed each spring.", "C:\\Windows\\tides.md"))
    assert resp.status_code == 201, resp.get_json()
    assert _document_ids(admin_client) == {"uploads/tides.md"}
    assert _stored(admin_client) == {"tides.md"}


def test_feedback_has_a_size_limit_and_a_rate_limit_per_client(admin_client):
    """Before: 300 posts added 8 MB, with no limit."""
    big = {"rating": "wrong", "question": "q", "answer": "a" * 20000, "comment": "c" * 2000,
           "citations": [{"n": i + 1, "chunk_id": "x" * 500} for i in range(100)]}
    error = _error(admin_client.post("/v1/feedback", json=big), 413, "request_too_large")
    assert "feedback is at most" in error["message"]
    limit = admin_client.application.config["KGRAG_SETTINGS"].server.feedback_per_minute
    for i in range(limit):
        resp = admin_client.post("/v1/feedback", json={"rating": "helpful", "question": f"question {i}"})
        assert resp.status_code == 201, resp.get_json()
    resp = admin_client.post("/v1/feedback", json={"rating": "helpful", "question": "one more"})
    error = _error(resp, 429, "rate_limited")
    assert 0 < int(resp.headers["Retry-After"]) <= 60 and "feedback posts a minute" in error["message"]
    # Another client is not held back.
    other = admin_client.post("/v1/feedback", json={"rating": "helpful", "question": "from elsewhere"},
                              environ_base={"REMOTE_ADDR": "10.0.0.9"})
    assert other.status_code == 201


def test_leftover_upload_staging_is_removed_at_start(components):
    """Before: a killed upload left ``uploads/.incoming/<uuid>/`` behind for good."""
    left = Path(components.settings.data_dir) / "uploads" / ".incoming" / "0123abcd"
    left.mkdir(parents=True)
    (left / "half.md").write_bytes(b"# Half\n\nwritten when the server was killed")
    kept = Path(components.settings.data_dir) / "uploads" / "kept.md"
    kept.write_bytes(b"# Kept\n\nan ingested upload")
    create_app(_with_key(components.settings), components, warm=False)
    assert not left.exists() and kept.exists()
