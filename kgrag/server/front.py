"""The HTTP front of ``kgrag serve``: an asyncio server that reads each request whole (request
line, headers and body) without holding a thread, under deadlines, and only then hands it to a
thread that runs the WSGI app.

Why (issue 47): gunicorn's threaded worker gives a connection a thread as soon as its first
bytes arrive and reads the body from inside the app. Twenty clients announcing
``Content-Length: 1000`` and sending a byte every 5 s held all 8 threads; with a 30 s deadline
per request they still did, reconnecting as they were cut (``/healthz`` p50 17.7 s, 67 query
timeouts in ``benchmarks/load.py``). Here a slow client holds a coroutine, never a thread, and
the deadlines bound even that:

* ``header_timeout_s``: the request line and headers, from their first byte;
* ``request_timeout_s``: line, headers and body together (a 408 when missed);
* ``send_timeout_s``: a response the client does not read;
* ``keepalive_s``: an idle connection between requests.

HTTP/1.1 is parsed by h11. Bodies are bounded (``max_body_bytes``, chunked ones included: a 413,
never a silent cut). Every error this layer gives is JSON, as the app's are.

Requests run in *lanes*, each a thread pool with a bounded queue (``Lane``); the app says which
lane a request belongs to (``lane_of``). Probes (``/healthz``, ``/readyz``) never wait behind
questions, and admin writes (an import of minutes) never take the threads questions use. A
full lane answers at once with its status (503, or 429 for admin work) and ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote_to_bytes

import h11

from kgrag.errors import InputError

log = logging.getLogger(__name__)

READ_SIZE = 64 * 1024
# Response bytes the front holds for a client before a writing thread waits for it: most
# answers fit, so a thread rarely waits on a slow reader at all.
WRITE_BUFFER = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    header_timeout_s: float = 10.0
    request_timeout_s: float = 30.0
    send_timeout_s: float = 30.0
    keepalive_s: float = 5.0
    max_body_bytes: int = 2 * 1024 * 1024
    max_header_bytes: int = 16 * 1024
    max_target_bytes: int = 8190
    max_connections: int = 1000


@dataclass(frozen=True)
class Lane:
    """``threads`` run requests at once, ``queue`` more wait; one more is answered ``busy_status``
    with ``Retry-After: retry_after_s``."""

    threads: int
    queue: int
    busy_status: int = 503
    retry_after_s: int = 1


class _LanePool:
    def __init__(self, name: str, lane: Lane):
        self.name, self.lane = name, lane
        self.executor = ThreadPoolExecutor(max_workers=lane.threads, thread_name_prefix=f"kgrag-{name}")
        self.inside = 0  # running and waiting

    def enter(self) -> bool:
        if self.inside >= self.lane.threads + self.lane.queue:
            return False
        self.inside += 1
        return True

    def leave(self) -> None:
        self.inside -= 1


class _Refused(InputError):
    """A request this layer answers itself (``status``, JSON error) and then closes."""

    def __init__(self, status: int, code: str, message: str, headers: Iterable[tuple[str, str]] = ()):
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, list(headers)


class _Closed(InputError):
    """The connection is over: the client went away or stayed idle too long (nothing is answered)."""


class Front:
    """Serves ``app`` (a WSGI callable) on listening sockets given to ``serve``."""

    def __init__(self, app: Callable, limits: Limits, lanes: dict[str, Lane],
                 lane_of: Callable[[str, str], str], server_name: str = "kgrag"):
        self.app = app
        self.limits = limits
        self.pools = {name: _LanePool(name, lane) for name, lane in lanes.items()}
        self.lane_of = lane_of
        self.server_name = server_name
        self.connections: set[asyncio.Task] = set()
        self.idle: set[asyncio.Task] = set()  # connections waiting for their next request
        self.stopping = False
        self.loop: asyncio.AbstractEventLoop | None = None

    # -- life cycle ------------------------------------------------------------------------
    async def start(self, sockets: Iterable[Any]) -> list[asyncio.Server]:
        self.loop = asyncio.get_running_loop()
        return [await asyncio.start_server(self._connection, sock=sock, limit=READ_SIZE) for sock in sockets]

    async def stop(self, servers: Iterable[asyncio.Server], grace_s: float) -> None:
        """Stop accepting, end idle connections, let requests in progress finish (``grace_s``
        at most), then end the rest."""
        self.stopping = True
        for server in servers:
            server.close()
        for task in list(self.idle):
            task.cancel()
        pending = [t for t in self.connections if not t.done()]
        if pending:
            _, late = await asyncio.wait(pending, timeout=grace_s)
            for task in late:
                task.cancel()
        for pool in self.pools.values():
            pool.executor.shutdown(wait=False, cancel_futures=True)

    # -- one connection --------------------------------------------------------------------
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self.connections) >= self.limits.max_connections or self.stopping:
            writer.close()
            return
        self.connections.add(task)
        writer.transport.set_write_buffer_limits(high=WRITE_BUFFER)
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self.limits.max_header_bytes)
        peer = writer.get_extra_info("peername") or ("", 0)
        local = writer.get_extra_info("sockname") or ("127.0.0.1", 0)
        try:
            first = True
            while not self.stopping:
                try:
                    request, body = await self._read_request(conn, reader, writer, task, first)
                except _Refused as refused:
                    await self._refuse(conn, writer, refused)
                    return
                first = False
                keep = await self._respond(conn, writer, request, body, peer, local)
                if not keep or conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (_Closed, ConnectionError, asyncio.CancelledError, h11.LocalProtocolError, TimeoutError):
            pass
        finally:
            self.connections.discard(task)
            self.idle.discard(task)
            writer.close()

    async def _read_request(self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                            task: asyncio.Task, first: bool) -> tuple[h11.Request, bytes]:
        """The next request with its whole body, or ``_Refused`` (answered, then the connection
        closes), or ``_Closed`` (the client left, or sent nothing for the idle time)."""
        limits = self.limits
        started: float | None = None
        head: bytes = b""  # the first bytes seen, to tell a long request line (414) from long headers
        request: h11.Request | None = None
        body = bytearray()
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                raise self._malformed(exc, head) from None
            if event is h11.NEED_DATA:
                now = time.monotonic()
                if started is None:  # nothing of this request yet: the connection is idle
                    wait = limits.header_timeout_s if first else limits.keepalive_s
                    self.idle.add(task)
                    try:
                        async with asyncio.timeout(wait):
                            data = await reader.read(READ_SIZE)
                    except TimeoutError:
                        raise _Closed() from None
                    finally:
                        self.idle.discard(task)
                    started = time.monotonic()
                else:
                    until = started + (limits.header_timeout_s if request is None else limits.request_timeout_s)
                    data = await self._read(reader, until - now, request)
                if not data:  # the client closed its side before the request was whole
                    raise _Closed()
                if len(head) < limits.max_target_bytes + 64:
                    head += data[: limits.max_target_bytes + 64 - len(head)]
                conn.receive_data(data)
                continue
            if isinstance(event, h11.Request):
                request = event
                if started is None:
                    started = time.monotonic()
                self._check_request(request)
                if conn.they_are_waiting_for_100_continue:
                    writer.write(conn.send(h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue")) or b"")
                continue
            if isinstance(event, h11.Data):
                body += event.data
                if len(body) > limits.max_body_bytes:
                    raise _Refused(413, "request_too_large",
                                   f"request body is larger than {limits.max_body_bytes} bytes")
                continue
            if isinstance(event, h11.EndOfMessage):
                assert request is not None
                return request, bytes(body)
            if isinstance(event, h11.ConnectionClosed):
                raise _Closed()
            raise _Closed()  # PAUSED cannot happen while reading one request

    async def _read(self, reader: asyncio.StreamReader, timeout: float, request: h11.Request | None) -> bytes:
        try:
            async with asyncio.timeout(max(0.0, timeout)):
                data = await reader.read(READ_SIZE)
        except TimeoutError:
            raise _Refused(408, "request_timeout", self._timeout_message(request)) from None
        return data

    def _timeout_message(self, request: h11.Request | None) -> str:
        if request is None:
            return f"the request line and headers did not arrive within {self.limits.header_timeout_s:g} s"
        return f"the request did not arrive whole within {self.limits.request_timeout_s:g} s"

    def _check_request(self, request: h11.Request) -> None:
        if len(request.target) > self.limits.max_target_bytes:
            raise _Refused(414, "uri_too_long", f"the request target is longer than {self.limits.max_target_bytes} bytes")
        if sum(len(name) + len(value) + 4 for name, value in request.headers) > self.limits.max_header_bytes:
            raise _Refused(431, "headers_too_large",
                           f"the request headers are larger than {self.limits.max_header_bytes} bytes")
        for name, value in request.headers:
            if name == b"content-length" and value.isdigit() and int(value) > self.limits.max_body_bytes:
                raise _Refused(413, "request_too_large", f"request body is larger than {self.limits.max_body_bytes} bytes")

    def _malformed(self, exc: h11.RemoteProtocolError, head: bytes) -> _Refused:
        line_end = head.find(b"\r\n")
        line = len(head) if line_end < 0 else line_end
        if line > self.limits.max_target_bytes:
            return _Refused(414, "uri_too_long", f"the request line is longer than {self.limits.max_target_bytes} bytes")
        status = exc.error_status_hint if 400 <= exc.error_status_hint < 600 else 400
        if status == 431:
            return _Refused(431, "headers_too_large", f"the request headers are larger than {self.limits.max_header_bytes} bytes")
        return _Refused(status, "bad_request", f"malformed HTTP request: {exc}")

    async def _refuse(self, conn: h11.Connection, writer: asyncio.StreamWriter, refused: _Refused) -> None:
        if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        rid = uuid.uuid4().hex
        body = json.dumps({"error": {"code": refused.code, "message": refused.message, "request_id": rid}},
                          ensure_ascii=False).encode()
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                   ("Connection", "close"), ("X-Request-Id", rid), *refused.headers]
        try:
            writer.write(_head_bytes(conn, refused.status, headers))
            data = conn.send(h11.Data(data=body))
            end = conn.send(h11.EndOfMessage())
            writer.write((data or b"") + (end or b""))
            async with asyncio.timeout(self.limits.send_timeout_s):
                await writer.drain()
        except (h11.LocalProtocolError, ConnectionError, TimeoutError):
            pass
        if refused.status >= 500 or refused.status in (408, 413, 414, 431):
            log.warning("answered %d %s: %s", refused.status, refused.code, refused.message)

    # -- handing the request to the app ----------------------------------------------------
    async def _respond(self, conn: h11.Connection, writer: asyncio.StreamWriter, request: h11.Request,
                       body: bytes, peer: Any, local: Any) -> bool:
        environ = self._environ(request, body, peer, local)
        lane = self.pools.get(self.lane_of(environ["REQUEST_METHOD"], environ["PATH_INFO"])) \
            or self.pools["reads"]
        if not lane.enter():
            retry = str(lane.lane.retry_after_s)
            what = "admin work" if lane.name == "admin" else "requests"
            await self._refuse(conn, writer, _Refused(
                lane.lane.busy_status, "busy",
                f"the server is at capacity for {what}: try again in {retry} s", [("Retry-After", retry)]))
            return False
        sink = _Sink(self, conn, writer, request.method == b"HEAD")
        try:
            assert self.loop is not None
            await self.loop.run_in_executor(lane.executor, sink.run_app, self.app, environ)
        finally:
            lane.leave()
        return sink.keep_alive and not self.stopping

    def _environ(self, request: h11.Request, body: bytes, peer: Any, local: Any) -> dict[str, Any]:
        target = request.target
        path, _, query = target.partition(b"?")
        if path.startswith(b"http://") or path.startswith(b"https://"):  # absolute form
            path = b"/" + path.split(b"/", 3)[-1] if path.count(b"/") >= 3 else b"/"
        environ: dict[str, Any] = {
            "REQUEST_METHOD": request.method.decode("ascii"),
            "SCRIPT_NAME": "",
            "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
            "QUERY_STRING": query.decode("latin-1"),
            "RAW_URI": target.decode("latin-1"),
            "SERVER_NAME": str(local[0]),
            "SERVER_PORT": str(local[1]),
            "SERVER_PROTOCOL": "HTTP/" + request.http_version.decode("ascii"),
            "REMOTE_ADDR": str(peer[0]),
            "REMOTE_PORT": str(peer[1]),
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.input_terminated": True,
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        for raw_name, raw_value in request.headers:
            name = raw_name.decode("latin-1")
            value = raw_value.decode("latin-1")
            if name == "content-type":
                environ["CONTENT_TYPE"] = value
            elif name in ("content-length", "transfer-encoding") or "_" in name:
                continue  # the body is read whole; a header with "_" could pose as another one
            else:
                key = "HTTP_" + name.upper().replace("-", "_")
                environ[key] = f"{environ[key]},{value}" if key in environ else value
        return environ


class _Sink:
    """The app's side of one response: ``run_app`` runs in a lane's thread, every write it makes
    is done by the event loop (h11 and the socket belong to the loop)."""

    def __init__(self, front: Front, conn: h11.Connection, writer: asyncio.StreamWriter, head_only: bool):
        self.front, self.conn, self.writer, self.head_only = front, conn, writer, head_only
        self.status: tuple[int, str, list[tuple[str, str]]] | None = None
        self.head_sent = False
        self.keep_alive = True

    def run_app(self, app: Callable, environ: dict[str, Any]) -> None:
        try:
            result = app(environ, self._start_response)
        except Exception:  # noqa: BLE001 - the app's own handlers answer everything they can
            log.exception("the app failed outside its error handlers")
            self._send_error()
            return
        try:
            whole = self.status is not None and any(n.lower() == "content-length" for n, _ in self.status[2])
            if whole:  # one write for the whole body
                self._call(self._write(b"".join(result), end=True))
            else:  # a stream (server-sent events): each piece as it comes
                for piece in result:
                    if piece:
                        self._call(self._write(piece, end=False))
                self._call(self._write(b"", end=True))
        except Exception:  # noqa: BLE001 - the client went away or the stream failed mid-way
            self.keep_alive = False
            if not self.head_sent:
                self._send_error()
            else:
                log.debug("response abandoned", exc_info=True)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()

    def _start_response(self, status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable:
        if exc_info is not None and self.head_sent:
            raise exc_info[1].with_traceback(exc_info[2])
        code, _, reason = status.partition(" ")
        self.status = (int(code), reason, list(headers))
        return lambda data: self._call(self._write(data, end=False))

    def _call(self, coro: Any) -> None:
        loop = self.front.loop
        assert loop is not None
        asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=self.front.limits.send_timeout_s + 5)

    def _send_error(self) -> None:
        if self.head_sent:
            return
        self.keep_alive = False
        refused = _Refused(500, "internal_error", "the server failed; its log has the details")
        try:
            self._call(self.front._refuse(self.conn, self.writer, refused))
        except Exception:  # noqa: BLE001 - the connection is gone
            pass

    async def _write(self, data: bytes, *, end: bool) -> None:
        conn, writer = self.conn, self.writer
        if not self.head_sent:
            assert self.status is not None, "the app wrote before start_response"
            code, reason, headers = self.status
            writer.write(_head_bytes(conn, code, headers, reason))
            self.head_sent = True
        if data and not self.head_only:
            out = conn.send(h11.Data(data=data))
            if out:
                writer.write(out)
        if end:
            out = conn.send(h11.EndOfMessage())
            if out:
                writer.write(out)
            if conn.our_state is h11.MUST_CLOSE:
                self.keep_alive = False
        async with asyncio.timeout(self.front.limits.send_timeout_s):
            await writer.drain()


def _head_bytes(conn: h11.Connection, status: int, headers: list[tuple[str, str]], reason: str = "") -> bytes:
    phrase = reason or _phrase(status)
    out = conn.send(h11.Response(status_code=status, reason=phrase.encode("latin-1"),
                                 headers=[(n.encode("latin-1"), v.encode("latin-1")) for n, v in headers]))
    assert out is not None
    return out


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def run_in_thread(front: Front, sockets: list[Any]) -> tuple[threading.Thread, Callable[[], None]]:
    """Serve in a thread of this process (tests, benchmarks without gunicorn): returns the
    thread and a function that stops it."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def main() -> None:
        state["servers"] = await front.start(sockets)
        state["stop"] = asyncio.Event()
        ready.set()
        await state["stop"].wait()
        await front.stop(state["servers"], grace_s=5.0)

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), name="kgrag-front", daemon=True)
    thread.start()
    ready.wait(10)

    def stop() -> None:
        loop.call_soon_threadsafe(state["stop"].set)
        thread.join(timeout=15)

    return thread, stop
