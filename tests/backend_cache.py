"""Start a test backend (a server, a container, an env-given URL) once per session; remember why
one cannot start, so every test that needs it skips with that reason printed."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Generic, NoReturn, TypeVar

import pytest

T = TypeVar("T")


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
            self._unavailable(self._failures[name], required)
        if name not in self._started:
            try:
                self._started[name] = start()
            except Unavailable as e:
                self._failures[name] = str(e)
                self._unavailable(str(e), required)
        return self._started[name]

    @staticmethod
    def _unavailable(reason: str, required: str | None) -> NoReturn:
        if required and os.environ.get(required) == "1":
            pytest.fail(f"{required}=1 but {reason}", pytrace=False)
        pytest.skip(reason)
