"""Slow and hostile clients cannot starve the server (issues 12 and 47): a real ``kgrag serve``
process front (gunicorn's arbiter, kgrag's asyncio front, the app's threads) with short
deadlines, loopback only, every wait bounded.

The served app is a small Flask app, not kgrag's (loading the models would make this slow and
prove nothing more): what is tested is the front and the options ``kgrag serve`` runs it with
(``KgragGunicorn``); the lanes come from the same ``lane_of`` rule as kgrag's app.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

THREADS = 2
SLOW_CLIENTS = 8  # four times the threads: on a threaded worker they held every one
HEADER_TIMEOUT_S = 1.0
REQUEST_TIMEOUT_S = 2.0

SERVER = """
import sys, time
from flask import Flask, request
from kgrag.config import ServerSettings, Settings
from kgrag.server.auth import require_admin
from kgrag.server.gunicorn_app import KgragGunicorn

app = Flask("tiny")
app.add_url_rule("/healthz", "healthz", lambda: {"status": "ok"})
app.add_url_rule("/read", "read", lambda: {"ok": True})
app.add_url_rule("/echo", "echo", lambda: {"bytes": len(request.get_data())}, methods=["POST"])

@app.post("/admin/slow")
@require_admin
def slow():
    time.sleep(float(request.args.get("s", "2")))
    return {"done": True}

app.config["KGRAG_SETTINGS"] = settings = Settings(data_dir=sys.argv[1], server=ServerSettings(
    port=int(sys.argv[2]), api_key="k", threads=int(sys.argv[3]), queue=4, admin_threads=1, admin_queue=0,
    header_timeout_s=float(sys.argv[4]), request_timeout_s=float(sys.argv[5]), keepalive_s=1.0,
    max_request_bytes=10_000))
KgragGunicorn(settings, load=lambda: app).run()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    port = _free_port()
    env = {**os.environ, "HOME": str(home), "XDG_RUNTIME_DIR": str(home)}
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(tmp_path_factory.mktemp("kb")), str(port),
                             str(THREADS), str(HEADER_TIMEOUT_S), str(REQUEST_TIMEOUT_S)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2):
                break
        except OSError:
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "server did not start in 60 s"
            time.sleep(0.2)
    yield port, url, home
    proc.terminate()
    proc.wait(timeout=30)


def _dribble(port: int, first: bytes, then: bytes, stop: threading.Event, outcome: list) -> None:
    """Send ``first``, then one byte of ``then`` every 0.2 s (so no single read ever waits
    long), until the server closes the connection or ``stop``; record when it closed and what
    it answered."""
    started = time.monotonic()
    answer = b""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(first)
        sock.setblocking(False)
        for i in range(150):
            if stop.wait(0.2):
                return
            try:
                chunk = sock.recv(4096)
                if not chunk:  # the server closed its end
                    break
                answer += chunk
            except BlockingIOError:  # still open, nothing to read
                pass
            except OSError:
                break
            try:
                sock.send(then[i % len(then):i % len(then) + 1])
            except OSError:
                break
        outcome.append((time.monotonic() - started, answer))


def _get(url: str, timeout: float = 20) -> tuple[int, dict, float]:
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, json.load(r), time.monotonic() - t0
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), time.monotonic() - t0


@pytest.mark.parametrize("kind", ["dribbled-headers", "slow-body"])
def test_slow_clients_are_cut_at_the_deadline_and_never_hold_a_thread(server, kind):
    """Before (gunicorn's threaded worker, a 30 s limit per read and none for the whole
    request): a client sending a byte every 5 s after ``Content-Length: 1000`` was never cut,
    and as many such clients as threads held every thread (``/healthz`` after 73 s)."""
    port, url, _ = server
    if kind == "dribbled-headers":  # headers that never end, a byte at a time
        first, then, limit = b"GET /healthz HTTP/1.1\r\nHost: x\r\n", b"X-Slow: aaaaaaaa", HEADER_TIMEOUT_S
    else:  # headers whole, then the body a byte at a time
        first, then, limit = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n", b"a", REQUEST_TIMEOUT_S
    stop, outcome = threading.Event(), []
    clients = [threading.Thread(target=_dribble, args=(port, first, then, stop, outcome)) for _ in range(SLOW_CLIENTS)]
    for c in clients:
        c.start()
    try:
        time.sleep(0.5)  # every slow client is connected and sending
        for _ in range(5):  # meanwhile the server answers at once, again and again
            status, body, waited = _get(url + "/healthz")
            assert status == 200 and body == {"status": "ok"} and waited < 1.0, waited
            status, body, waited = _get(url + "/read")
            assert status == 200 and waited < 1.0, waited
            time.sleep(0.1)
        for c in clients:
            c.join(timeout=20)
    finally:
        stop.set()
        for c in clients:
            c.join(timeout=15)
    # The server, not the client, ended each connection at its deadline (+ slack), saying why.
    assert len(outcome) == SLOW_CLIENTS, outcome
    for took, answer in outcome:
        assert limit <= took + 0.3 and took < limit + 2.0, (took, limit)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408"), answer
        assert b"content-type: application/json" in head.lower()
        assert json.loads(body)["error"]["code"] == "request_timeout"


def _raw(port: int, request: bytes, timeout: float = 10) -> tuple[bytes, dict]:
    """Send ``request``, read the answer until the server closes: (status line, JSON body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(request)
        except OSError:  # the server may answer and close before all of a large request is sent
            pass
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except OSError:
            pass
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head.lower(), answer[:300]
    return head.split(b"\r\n")[0], json.loads(body)


def test_a_chunked_body_over_the_limit_is_413_not_cut(server):
    """Before: a chunked body over the limit was silently cut and answered 200/400."""
    port, url, _ = server
    chunk = b"a" * 4000
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(4)) + b"0\r\n\r\n"
    line, error = _raw(port, b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                       b"Content-Type: text/plain\r\n\r\n" + body)
    assert line.startswith(b"HTTP/1.1 413") and error["error"]["code"] == "request_too_large", (line, error)
    # Under the limit, a chunked body arrives whole.
    small = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(2)) + b"0\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + small)
        answer = b""
        while piece := sock.recv(65536):
            answer += piece
    assert answer.startswith(b"HTTP/1.1 200") and json.loads(answer.partition(b"\r\n\r\n")[2]) == {"bytes": 8000}
    # A declared length over the limit is refused before any of it is read.
    line, error = _raw(port, b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n")
    assert line.startswith(b"HTTP/1.1 413"), line


@pytest.mark.parametrize(("request_bytes", "status", "code"), [
    (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long"),
    (b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-Big: " + b"b" * 20000 + b"\r\n\r\n", 431, "headers_too_large"),
    (b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", 400, "bad_request"),
    (b"NONSENSE\r\n\r\n", 400, "bad_request"),
], ids=["long-uri", "huge-headers", "malformed-header", "garbage"])
def test_every_error_of_the_http_layer_is_json(server, request_bytes, status, code):
    """Before: gunicorn's own 400 and 414 answers were HTML pages."""
    port, _, _ = server
    line, error = _raw(port, request_bytes)
    assert line.startswith(b"HTTP/1.1 %d" % status), line
    assert error["error"]["code"] == code and error["error"]["request_id"], error


def test_admin_work_has_its_own_lane_and_a_full_one_says_when_to_retry(server):
    """An admin change runs on its own thread (here one, no queue): a second one at the same time
    is a 429 with Retry-After, and reads keep answering at once meanwhile."""
    port, url, _ = server

    def admin(seconds: float, out: list) -> None:
        req = urllib.request.Request(f"{url}/admin/slow?s={seconds}", data=b"", method="POST",
                                     headers={"X-API-Key": "k"})
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                out.append((r.status, dict(r.headers), json.load(r)))
        except urllib.error.HTTPError as e:
            out.append((e.code, dict(e.headers), json.loads(e.read())))

    first: list = []
    worker = threading.Thread(target=admin, args=(2.0, first))
    worker.start()
    time.sleep(0.5)
    second: list = []
    admin(0.1, second)
    status, headers, body = second[0]
    assert status == 429 and headers["Retry-After"].isdigit() and body["error"]["code"] == "busy", second
    for _ in range(3):
        status, _, waited = _get(url + "/read")
        assert status == 200 and waited < 1.0, waited
    worker.join(timeout=20)
    assert first[0][0] == 200 and first[0][2] == {"done": True}


def test_no_control_socket_is_made(server):
    """gunicorn's default control socket (``~/.gunicorn/gunicorn.ctl``) was shared by every
    server of the user, and could add workers."""
    _, _, home = server
    made = [p for p in home.rglob("*") if "gunicorn" in p.name or p.is_socket()]
    assert made == [], made
