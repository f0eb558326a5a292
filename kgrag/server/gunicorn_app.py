"""Production serving: gunicorn with one worker process and several threads, so every request
shares one loaded model set (the models are the memory; a second worker would double it).

Slow clients: gunicorn's threaded worker gives a connection a thread as soon as its first
bytes arrive, then reads headers and body with blocking calls and no deadline, so 8 sockets
that send half a request held all 8 threads and ``/healthz`` timed out for minutes (issue 12).
``SlowClientSafeWorker`` bounds both: the request line and headers must arrive within
``header_timeout_s`` in total (Apache's ``RequestReadTimeout header=``), and every later read
or write of the connection (the body, the response) may stall at most ``read_timeout_s``
(nginx's ``client_body_timeout`` / ``send_timeout``). A client past either loses its connection
and the thread goes back to the pool. Behind a reverse proxy, set the proxy's own header/body
timeouts to the same or less.
"""

from __future__ import annotations

import http
import io
import json
import socket
import threading
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.http.body import Body
from gunicorn.workers.gthread import ThreadWorker

from kgrag.config import Settings

HEADER_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 30.0
REQUEST_TIMEOUT_S = 30.0


class _TooLarge(Exception):
    pass


class _BytesReader:
    def __init__(self, data: bytes):
        self._io = io.BytesIO(data)

    def read(self, size: int) -> bytes:
        return self._io.read(size)


def _read_body(req, limit: int) -> bytes:
    for name, value in req.headers:
        if name == "CONTENT-LENGTH" and value.isdigit() and int(value) > limit:
            raise _TooLarge()
    if req.body is None:
        return b""
    parts, size = [], 0
    while True:
        piece = req.body.read(65536)
        if not piece:
            return b"".join(parts)
        size += len(piece)
        if size > limit:
            raise _TooLarge()
        parts.append(piece)


def _write_json_error(sock, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    head = (f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode("latin-1")
    try:
        sock.settimeout(1.0)
        sock.sendall(head + body)
    except OSError:
        pass


class SlowClientSafeWorker(ThreadWorker):
    """gunicorn's gthread worker with a header deadline and a per-read/write socket timeout."""

    header_timeout_s = HEADER_TIMEOUT_S
    read_timeout_s = READ_TIMEOUT_S
    request_timeout_s = REQUEST_TIMEOUT_S
    max_request_bytes = 2 * 1024 * 1024

    def enqueue_req(self, conn) -> None:
        if not getattr(conn, "kgrag_timed", False):
            conn.kgrag_timed = True
            conn.init = self._timed_init(conn, conn.init)
        super().enqueue_req(conn)

    def _timed_init(self, conn, init):
        """gunicorn calls ``conn.init()`` in the worker thread before it parses each request
        (after making the socket blocking, which clears any timeout): arm both limits there."""

        def timed_init() -> None:
            init()
            conn.sock.settimeout(self.read_timeout_s)
            # Shutting the read side down makes the blocked recv return b"": gunicorn then
            # closes the connection as a client that went away.
            timer = threading.Timer(self.header_timeout_s, _stop_reading, (conn.sock,))
            timer.daemon = True
            conn.kgrag_header_timer = timer
            timer.start()
            whole = threading.Timer(self.request_timeout_s, _stop_reading, (conn.sock,))
            whole.daemon = True
            conn.kgrag_request_timer = whole
            whole.start()

        return timed_init

    def handle_request(self, req, conn):
        """Headers are in: the header deadline is met. The body is read here, whole, before
        the app runs, under the request deadline (line + headers + body)."""
        timer = getattr(conn, "kgrag_header_timer", None)
        if timer is not None:
            timer.cancel()
        deadline = getattr(conn, "kgrag_request_timer", None)
        try:
            body = _read_body(req, self.max_request_bytes)
        except _TooLarge:
            _write_json_error(conn.sock, 413, "request_too_large",
                              f"request body is larger than {self.max_request_bytes} bytes")
            return False
        except Exception:
            if deadline is not None and deadline.finished.is_set():
                _write_json_error(conn.sock, 408, "request_timeout",
                                  f"the request did not arrive within {self.request_timeout_s:g} s")
                return False
            raise
        finally:
            if deadline is not None:
                deadline.cancel()
        req.body = Body(_BytesReader(body))
        return super().handle_request(req, conn)


def _stop_reading(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RD)
    except OSError:  # already closed
        pass


def worker_class(header_timeout_s: float, read_timeout_s: float, request_timeout_s: float = REQUEST_TIMEOUT_S,
                 max_request_bytes: int = 2 * 1024 * 1024) -> type[SlowClientSafeWorker]:
    return type("SlowClientSafeWorker", (SlowClientSafeWorker,),
                {"header_timeout_s": header_timeout_s, "read_timeout_s": read_timeout_s,
                 "request_timeout_s": request_timeout_s, "max_request_bytes": max_request_bytes})


class KgragGunicorn(BaseApplication):
    def __init__(self, settings: Settings, threads: int = 8, timeout_s: int = 120,
                 header_timeout_s: float = HEADER_TIMEOUT_S, read_timeout_s: float = READ_TIMEOUT_S,
                 request_timeout_s: float = REQUEST_TIMEOUT_S):
        self.settings = settings
        self.options: dict[str, Any] = {
            "bind": f"{settings.server.host}:{settings.server.port}",
            "workers": 1,
            "worker_class": worker_class(header_timeout_s, read_timeout_s, request_timeout_s,
                                         settings.server.max_request_bytes),
            "threads": threads,
            # generation with a slow LLM can take a while; SSE streams keep the connection
            "timeout": timeout_s,
            # The app writes one JSON line per request (kgrag/server/request_log.py) with the
            # request id and stage timings; gunicorn's plain access line would repeat it.
            "accesslog": None,
            # The worker loads the app itself (models, SQLite connections, threads): nothing
            # that does not survive a fork is created before one. Requests wait in the listen
            # queue until it is ready; /readyz says when.
            "preload_app": False,
        }
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self):
        from kgrag.server.app import create_app

        return create_app(self.settings)
