"""The feedback loop: ratings of answers (stored beside the knowledge base), exported as an
evaluation set in the ``shared/bench`` format so ``kgrag eval`` runs on a team's own questions.

The names below are loaded on first use: ``kgrag feedback`` commands and ``kgrag query
--server`` import this package without opening (or importing) any store."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from kgrag.feedback.ratings import RATINGS, Rating

if TYPE_CHECKING:
    from kgrag.feedback.export import ExportResult, export_queries
    from kgrag.feedback.store import ChunkRef, Feedback, FeedbackStore

_LAZY = {"ExportResult": "export", "export_queries": "export", "ChunkRef": "store", "Feedback": "store",
         "FeedbackStore": "store"}

__all__ = ["RATINGS", "ChunkRef", "ExportResult", "Feedback", "FeedbackStore", "Rating", "export_queries"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"kgrag.feedback.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'kgrag.feedback' has no attribute {name!r}")
