"""Admin routes need the configured API key (``X-API-Key`` or ``Authorization: Bearer``).
With no key configured they refuse everything: an open admin API is never the default."""

from __future__ import annotations

import hmac
from functools import wraps

from flask import current_app, request

from kgrag.server.errors import ApiError


def require_admin(view):
    @wraps(view)
    def wrapper(*args, **kwargs):
        expected = current_app.config["KGRAG_SETTINGS"].server.api_key
        if not expected:
            raise ApiError(403, "admin_disabled",
                           "admin routes are disabled: set KGRAG_SERVER__API_KEY to enable them")
        given = request.headers.get("X-API-Key", "")
        auth = request.headers.get("Authorization", "")
        if not given and auth.lower().startswith("bearer "):
            given = auth[7:].strip()
        if not given:
            raise ApiError(401, "unauthorized", "this admin route needs an API key (X-API-Key header)")
        if not hmac.compare_digest(given.encode(), expected.encode()):
            raise ApiError(401, "unauthorized", "the API key is not valid")
        return view(*args, **kwargs)

    wrapper.kgrag_admin = True  # type: ignore[attr-defined]  # read by kgrag.server.app.lane_of
    return wrapper
