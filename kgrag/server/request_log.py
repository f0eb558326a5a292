"""One JSON log line per request, and the request id that ties it to the client.

``X-Request-Id`` from the client is kept when it is a sane token (1–128 characters of
``[A-Za-z0-9._:-]``: a header is echoed into logs and responses, so nothing else is), otherwise
a fresh one is made; either way it is echoed in the response's ``X-Request-Id`` and is what
``/v1/query`` calls ``trace_id``. Routes add what they know (per-stage milliseconds, whether
the answer abstained, how many entities were linked) with ``note(...)``.

A streamed response is logged when it is closed, so a streamed answer is logged once, after
its last event, with the whole stream's latency and its outcome; any other response as it
leaves the app.
"""

from __future__ import annotations

import logging
import re
import sys
import time
import uuid
from typing import IO, Any

from flask import Flask, g, has_request_context, request
from pythonjsonlogger.json import JsonFormatter

REQUEST_ID_HEADER = "X-Request-Id"
_VALID_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def request_id() -> str:
    """The current request's id, fixed on first use so that an error body and the
    ``X-Request-Id`` header agree (outside a request: a fresh one)."""
    if not has_request_context():
        return uuid.uuid4().hex
    if not g.get("kgrag_request_id"):
        g.kgrag_request_id = _incoming_id()
    return g.kgrag_request_id


def note(**fields: Any) -> None:
    """Add fields to the current request's log line (later calls override earlier ones)."""
    fields_so_far = g.get("kgrag_log_fields")
    if fields_so_far is not None:
        fields_so_far.update(fields)


def _incoming_id() -> str:
    given = request.headers.get(REQUEST_ID_HEADER, "").strip()
    return given if _VALID_ID.match(given) else uuid.uuid4().hex


class RequestLog:
    """Per app: its own logger object (not in logging's global tree), so several apps in one
    process (tests) never share or duplicate handlers."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.logger = logging.Logger("kgrag.requests", logging.INFO)
        handler = logging.StreamHandler(stream or sys.stderr)
        handler.setFormatter(JsonFormatter("%(asctime)s %(levelname)s %(message)s",
                                           rename_fields={"asctime": "ts", "levelname": "level"},
                                           json_ensure_ascii=False))
        self.logger.addHandler(handler)

    def install(self, app: Flask) -> None:
        @app.before_request
        def _begin():
            g.kgrag_request_id = _incoming_id()
            g.kgrag_log_t0 = time.perf_counter()
            g.kgrag_log_fields = {}

        @app.after_request
        def _finish(response):
            rid = request_id()
            response.headers[REQUEST_ID_HEADER] = rid
            line = {
                "request_id": rid,
                "method": request.method,
                "route": request.url_rule.rule if request.url_rule else "unmatched",
                "path": request.path,
                "status": response.status_code,
            }
            fields = g.get("kgrag_log_fields") or {}  # the same dict routes (and streams) update
            t0 = g.get("kgrag_log_t0", time.perf_counter())
            if response.is_streamed:  # logged when the stream is done (its outcome known then)
                response.call_on_close(lambda: self._emit(line, fields, t0))
            else:
                self._emit(line, fields, t0)
            return response

    def _emit(self, line: dict[str, Any], fields: dict[str, Any], t0: float) -> None:
        line["latency_ms"] = round((time.perf_counter() - t0) * 1000, 2)
        line.update(fields)
        level = logging.ERROR if line["status"] >= 500 else logging.INFO
        self.logger.log(level, "request", extra=line)
