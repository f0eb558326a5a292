"""The feedback loop: ratings of answers (stored beside the knowledge base), exported as an
evaluation set in the ``shared/bench`` format so ``kgrag eval`` runs on a team's own questions."""

from kgrag.feedback.export import ExportResult, export_queries
from kgrag.feedback.store import RATINGS, ChunkRef, Feedback, FeedbackStore

__all__ = ["RATINGS", "ChunkRef", "ExportResult", "Feedback", "FeedbackStore", "export_queries"]
