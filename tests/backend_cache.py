"""Start a test backend (a server, a container, an env-given URL) once per session; remember why
one cannot start, so every test that needs it skips with that reason printed."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Generic, NoReturn, TypeVar

import pytest

T = TypeVar("T")


def unavailable(reason: str, required: str | None = None) -> NoReturn:
    """Skip the test with ``reason``; fail it instead when the environment variable ``required``
    is 1 (the suite's wrappers set KGRAG_REQUIRE_NEO4J, _LLM and _BROWSER where the part must run)."""
    if required and os.environ.get(required) == "1":
        pytest.fail(f"{required}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


class Unavailable(Exception):
    """A backend that cannot run here; the message is the skip reason."""


class BackendCache(Generic[T]):
    def __init__(self) -> None:
        self._started: dict[str, T] = {}
        self._failures: dict[str, str] = {}

    def get(self, name: str, start: Callable[[], T], *, required: str | None = None) -> T:
        """``required``: the name of an environment variable set to 1 that makes a backend that
        cannot start fail its tests instead of skipping them (scripts/test sets it)."""
        if name in self._failures:
            unavailable(self._failures[name], required)
        if name not in self._started:
            try:
                self._started[name] = start()
            except Unavailable as e:
                self._failures[name] = str(e)
                unavailable(str(e), required)
        return self._started[name]
