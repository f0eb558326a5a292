"""A small HTTP client for a running kgrag server (``kgrag --server URL ...``).

Why: a CLI call that builds its own pipeline imports torch and loads the embedder first
(``kgrag query`` on the demo spends nearly all its seconds on imports and model load;
docs/decisions.md, "The ONNX engine"). An admin loop against a server that already holds the
models costs one request.

Standard library only (``urllib``): this module is imported by the CLI before anything heavy,
and must not pull in a model or a web framework. Errors keep the server's JSON error body:
``RemoteError.status`` is the HTTP status (0 when the server could not be reached), ``code``
its machine-readable code, and the message names the problem as the server did.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from kgrag.errors import InputError, StoreError

DEFAULT_TIMEOUT_S = 120.0  # a query with an LLM answer can take tens of seconds on a CPU


class RemoteError(StoreError):
    """The server failed or could not be reached (HTTP 5xx, connection refused, timeout)."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code = status, code


class RemoteRefused(InputError):
    """The server refused the request as asked (HTTP 4xx); the message is the server's."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code = status, code


@dataclass(frozen=True)
class KgragClient:
    """Talks to ``base_url`` (e.g. ``http://127.0.0.1:8000``); ``api_key`` for admin routes."""

    base_url: str
    api_key: str | None = None
    user: str | None = None  # sent as X-Kgrag-User: the audit log names who made a change
    timeout_s: float = DEFAULT_TIMEOUT_S

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        return self.request("POST", path, body=body, params=params)

    def delete(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return self.request("DELETE", path, params=params)

    def request(self, method: str, path: str, *, body: Any = None, params: dict[str, Any] | None = None,
                data: bytes | None = None, content_type: str | None = None,
                headers: dict[str, str] | None = None) -> Any:
        """One request; the decoded JSON body (or text, for a non-JSON answer)."""
        if body is not None:
            data, content_type = json.dumps(body, ensure_ascii=False).encode("utf-8"), "application/json"
        req = urllib.request.Request(self.url(path, params), data=data, method=method,
                                     headers={**self._headers(content_type), **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return _decode(resp.headers.get_content_type(), resp.read())
        except urllib.error.HTTPError as exc:
            raise _error(exc.code, exc.read()) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RemoteError(0, "unreachable", f"cannot reach the kgrag server at {self.base_url}: {reason}") from None

    def url(self, path: str, params: dict[str, Any] | None = None) -> str:
        query = ""
        if params:
            pairs = [(k, _param(v)) for k, v in params.items() if v is not None and not isinstance(v, list)]
            pairs += [(k, _param(x)) for k, v in params.items() if isinstance(v, list) for x in v]
            query = "?" + urllib.parse.urlencode(pairs)
        return self.base_url.rstrip("/") + path + query

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        if self.api_key:
            headers["X-API-Key"] = self.api_key
        if self.user:
            headers["X-Kgrag-User"] = self.user
        return headers


def entity_path(name: str, suffix: str = "") -> str:
    """``/v1/entities/<name><suffix>`` with the name quoted (it may hold ``/``, spaces, CJK)."""
    return f"/v1/entities/{urllib.parse.quote(name, safe='')}{suffix}"


def _param(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _decode(content_type: str, raw: bytes) -> Any:
    text = raw.decode("utf-8", errors="replace")
    return json.loads(text) if content_type == "application/json" else text


def _error(status: int, raw: bytes) -> RemoteError | RemoteRefused:
    """The server's ``{"error": {"code", "message"}}`` body as an exception of the right kind."""
    code, message = "http_error", raw.decode("utf-8", errors="replace")[:300] or f"HTTP {status}"
    try:
        err = json.loads(raw).get("error", {})
        code, message = err.get("code", code), err.get("message", message)
    except (ValueError, AttributeError):
        pass
    message = f"the server answered {status}: {message}"
    return RemoteRefused(status, code, message) if 400 <= status < 500 else RemoteError(status, code, message)
