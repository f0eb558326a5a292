"""Every error leaves the server as JSON ``{"error": {"code", "message", "request_id"}}`` with
a status that says whose fault it is:

- 4xx: the request (``InputError``, a pydantic ``ValidationError``, ``ApiError``); the
  message names the field or value.
- 503 ``store_unavailable``: a store failed (``StoreError``, a SQLite database error such as a
  corrupted file). Never 400: the question was fine.
- 500 ``internal_error``: anything else.

Callers are anonymous, so a 5xx message names the kind of failure and the request id, never
the exception's text (it can hold server paths or SQL); the log line with that request id has
the traceback. ``redact_paths`` strips absolute server paths from texts that do reach callers.
"""

from __future__ import annotations

import logging
import re
import sqlite3

from flask import Flask, jsonify, request
from pydantic import ValidationError
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from kgrag.errors import InputError, StoreDamaged, StoreError
from kgrag.request_options import UnavailableOption
from kgrag.server.request_log import request_id

log = logging.getLogger(__name__)

# Engine failures the routes do not wrap: SQLite's own errors (a malformed or missing file).
STORE_FAILURES: tuple[type[BaseException], ...] = (StoreError, sqlite3.DatabaseError)
# An absolute POSIX or Windows path of two or more components.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~/-])(?:/|[A-Za-z]:\\)(?:[^\s'\"/\\:]+[/\\])+([^\s'\"/\\:]*)")


class ApiError(InputError):
    """A refusal the route words itself: ``status`` (every one raised is a 4xx) and ``code`` go
    into the JSON error unchanged (its own handler wins over InputError's plain 400)."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class RateLimited(ApiError):
    """429: the client sent too many; ``retry_after_s`` goes into ``Retry-After``."""

    def __init__(self, retry_after_s: int, message: str):
        super().__init__(429, "rate_limited", f"{message}: try again in {retry_after_s} s")
        self.retry_after_s = retry_after_s


def error_response(status: int, code: str, message: str):
    rid = request_id()
    return jsonify({"error": {"code": code, "message": message, "request_id": rid}}), status


def redact_paths(text: str) -> str:
    """``text`` with every absolute path cut to its last component (``/srv/kb/uploads/a.md`` →
    ``a.md``): file names help the caller, the server's directory layout does not."""
    return _ABSOLUTE_PATH.sub(lambda m: m.group(1) or "<path>", text)


def validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "body"
        given = err.get("input")
        shown = f" (got {given!r})" if isinstance(given, (str, int, float)) and len(repr(given)) <= 60 else ""
        parts.append(f"{where}: {err['msg']}{shown}")
    return "; ".join(parts)


def allowed_methods(app: Flask, path: str) -> set[str]:
    """The methods of the route a path names: of the most specific rule matching it (a rule
    with a ``path`` converter also matches the longer paths of other routes) and of the rules
    with the same template. werkzeug's own Allow merged them all: ``/v1/entities/x/rename``
    was said to allow GET and DELETE, the methods of ``/v1/entities/<key>``."""
    try:
        rule, _ = app.url_map.bind("localhost").match(path, method="OPTIONS", return_rule=True)
    except HTTPException:
        return set()
    return {m for r in app.url_map.iter_rules() if r.rule == rule.rule for m in (r.methods or ())}


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def _api(exc: ApiError):
        body, status = error_response(exc.status, exc.code, exc.message)
        if isinstance(exc, RateLimited):
            body.headers["Retry-After"] = str(exc.retry_after_s)
        return body, status

    @app.errorhandler(UnavailableOption)
    def _unavailable(exc: UnavailableOption):
        return error_response(400, "option_unavailable", str(exc))

    @app.errorhandler(ValidationError)
    def _validation(exc: ValidationError):
        return error_response(400, "invalid_request", validation_message(exc))

    @app.errorhandler(InputError)
    def _input(exc: InputError):
        return error_response(400, "invalid_request", redact_paths(str(exc)))

    @app.errorhandler(RequestEntityTooLarge)
    def _too_large(exc):
        limit = app.config.get("MAX_CONTENT_LENGTH")
        return error_response(413, "request_too_large", f"request body is larger than {limit} bytes")

    @app.errorhandler(HTTPException)
    def _http(exc: HTTPException):
        code = (exc.name or "error").lower().replace(" ", "_")
        body, status = error_response(exc.code or 500, code, exc.description or exc.name)
        for name, value in exc.get_headers():  # e.g. a 405's Allow: which methods the route has
            if name.lower() != "content-type":
                body.headers[name] = value
        if status == 405:
            body.headers["Allow"] = ", ".join(sorted(allowed_methods(app, request.path)))
        return body, status

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception):
        rid = request_id()
        if isinstance(exc, StoreDamaged):  # its message names only the file and the command
            log.error("damaged store (request %s)", rid, exc_info=exc)
            return error_response(503, "store_unavailable", f"{redact_paths(str(exc))} (request id {rid})")
        if isinstance(exc, STORE_FAILURES):
            log.error("store failure (request %s)", rid, exc_info=exc)
            return error_response(503, "store_unavailable",
                                  f"a store failed ({type(exc).__name__}); the server log has the details "
                                  f"under request id {rid}")
        log.error("unhandled error (request %s)", rid, exc_info=exc)
        return error_response(500, "internal_error",
                              f"the server failed ({type(exc).__name__}); the server log has the details "
                              f"under request id {rid}")
