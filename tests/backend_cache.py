"""Start a test backend (a server, a container, an env-given URL) once per session; remember why
one cannot start, so every test that needs it skips with that reason printed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import pytest

T = TypeVar("T")


class Unavailable(Exception):
    """A backend that cannot run here; the message is the skip reason."""


class BackendCache(Generic[T]):
    def __init__(self) -> None:
        self._started: dict[str, T] = {}
        self._failures: dict[str, str] = {}

    def get(self, name: str, start: Callable[[], T]) -> T:
        if name in self._failures:
            pytest.skip(self._failures[name])
        if name not in self._started:
            try:
                self._started[name] = start()
            except Unavailable as e:
                self._failures[name] = str(e)
                pytest.skip(str(e))
        return self._started[name]
