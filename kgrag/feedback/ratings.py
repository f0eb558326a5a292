"""The ratings a person may give an answer."""

from __future__ import annotations

from typing import Literal

Rating = Literal["helpful", "wrong", "missing_source"]
RATINGS: tuple[str, ...] = ("helpful", "wrong", "missing_source")
