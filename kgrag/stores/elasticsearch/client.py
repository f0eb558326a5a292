"""Elasticsearch connection for the chunk index: one client built from settings, and the
translation of client exceptions into ``StoreError`` messages that name the server.

The ``elasticsearch`` client's major version must match the server's: 8.x clients send
``compatible-with=8`` headers, which Elasticsearch 8 and 9 servers accept; 9.x clients send
``compatible-with=9``, which Elasticsearch 8 refuses. pyproject.toml therefore pins ``<9``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from kgrag.errors import StoreError

if TYPE_CHECKING:
    from kgrag.config import ElasticsearchSettings


def redact_url(url: str) -> str:
    """``url`` without a password in its user-info part (it goes into error messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def build_es_client(settings: ElasticsearchSettings):
    """An ``Elasticsearch`` client for ``settings`` (no request is sent yet)."""
    from elasticsearch import Elasticsearch

    if settings.api_key and (settings.user or settings.password):
        raise StoreError("elasticsearch: set either api_key or user/password, not both")
    if bool(settings.user) != bool(settings.password):
        raise StoreError("elasticsearch: user and password must be set together")
    kwargs: dict = {
        "request_timeout": settings.request_timeout_s,
        "verify_certs": settings.verify_certs,
        # Retries cover a node restarting or a timeout; bulk writes are idempotent (by _id).
        "max_retries": 3,
        "retry_on_timeout": True,
    }
    if settings.ca_certs:
        kwargs["ca_certs"] = settings.ca_certs
    if settings.api_key:
        kwargs["api_key"] = settings.api_key
    elif settings.user:
        kwargs["basic_auth"] = (settings.user, settings.password)
    try:
        return Elasticsearch(settings.url, **kwargs)
    except ValueError as e:  # a malformed URL or contradictory TLS options
        raise StoreError(f"elasticsearch: bad connection settings for {redact_url(settings.url)}: {e}") from e


@contextmanager
def es_errors(url: str, action: str) -> Iterator[None]:
    """Re-raise client exceptions as StoreError naming the server and what was being done."""
    from elastic_transport import ConnectionError as TransportConnectionError
    from elastic_transport import ConnectionTimeout, SerializationError, TransportError
    from elasticsearch import ApiError, AuthenticationException, AuthorizationException

    where = redact_url(url)
    try:
        yield
    except (TransportConnectionError, ConnectionTimeout) as e:
        raise StoreError(f"cannot reach Elasticsearch at {where} ({action}): {e}") from e
    except AuthenticationException as e:
        raise StoreError(
            f"Elasticsearch at {where} refused the credentials ({action}); check "
            "elasticsearch.api_key or elasticsearch.user/password"
        ) from e
    except AuthorizationException as e:
        raise StoreError(f"Elasticsearch at {where}: not allowed to {action}: {_reason(e)}") from e
    except ApiError as e:
        raise StoreError(f"Elasticsearch at {where} failed to {action}: {e.meta.status} {_reason(e)}") from e
    except SerializationError as e:
        raise StoreError(f"Elasticsearch at {where}: cannot serialize data to {action}: {e}") from e
    except TransportError as e:
        raise StoreError(f"Elasticsearch at {where} failed to {action}: {e}") from e


def _reason(e) -> str:
    """``type: reason`` of an Elasticsearch error body, the root cause when there is one."""
    body = getattr(e, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        causes = error.get("root_cause") or [error]
        cause = causes[0] if isinstance(causes[0], dict) else error
        return f"{cause.get('type')}: {cause.get('reason')}"
    return str(error or e)
