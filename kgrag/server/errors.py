"""Every error leaves the server as JSON ``{"error": {"code", "message"}}`` with the right status."""

from __future__ import annotations

import logging

from flask import Flask, jsonify
from pydantic import ValidationError
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from kgrag.errors import InputError

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_response(status: int, code: str, message: str):
    return jsonify({"error": {"code": code, "message": message}}), status


def validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "body"
        given = err.get("input")
        shown = f" (got {given!r})" if isinstance(given, (str, int, float)) and len(repr(given)) <= 60 else ""
        parts.append(f"{where}: {err['msg']}{shown}")
    return "; ".join(parts)


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def _api(exc: ApiError):
        return error_response(exc.status, exc.code, exc.message)

    @app.errorhandler(ValidationError)
    def _validation(exc: ValidationError):
        return error_response(400, "invalid_request", validation_message(exc))

    @app.errorhandler(InputError)
    def _input(exc: InputError):
        return error_response(400, "invalid_request", str(exc))

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
        return body, status

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception):
        log.exception("unhandled error")
        return error_response(500, "internal_error", f"{type(exc).__name__}: the server failed; see its log")
