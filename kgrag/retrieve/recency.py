"""An optional preference for newer documents, applied to the fused hits (off by default).

Each hit's fused score is multiplied by ``1 + weight × 2^(−age / half_life)``, ``age`` being
the days from its document's date (``kgrag.facets``) to today (0 for a date in the future): a
document dated today gets ``1 + weight``, one ``half_life`` old ``1 + weight/2``, an undated one
``1`` (no boost, no penalty). Multiplying keeps the fused evidence in charge — an irrelevant new
chunk does not overtake a relevant old one unless their fused scores are within ``weight`` of
each other (with RRF, a few places): a preference between comparably relevant chunks, not a
filter. A reranker, when one runs, reorders the boosted pool by content afterwards.
"""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict, Field

from kgrag.config import RetrievalSettings
from kgrag.facets import chunk_date
from kgrag.retrieve.types import Hit


class Recency(BaseModel):
    """The request's ``"recency"`` object (and the settings' defaults)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # strict: a JSON number (true/false or "5" are refused, as the API document says)
    half_life_days: float = Field(gt=0, le=36500, strict=True, description="days after which a document's boost halves")
    weight: float = Field(RetrievalSettings.model_fields["recency_weight"].default, ge=0, le=10, strict=True,
                          description="boost of a document dated today (score × (1 + weight))")


def boost(hit: Hit, recency: Recency, today: dt.date) -> float:
    """The factor of ``hit``'s fused score (see the module docstring)."""
    day = chunk_date(hit.chunk.metadata)
    if day is None:
        return 1.0
    try:
        age = max((today - dt.date.fromisoformat(day)).days, 0)
    except ValueError:
        return 1.0
    return 1.0 + recency.weight * 2.0 ** (-age / recency.half_life_days)


def prefer_recent(hits: list[Hit], recency: Recency, today: dt.date) -> list[Hit]:
    """``hits`` with boosted scores, re-sorted (ties keep the fused order); fused ranks renumbered."""
    for hit in hits:
        hit.score = hit.score * boost(hit, recency, today)
    hits.sort(key=lambda h: (-h.score, h.fused_rank))
    for rank, hit in enumerate(hits, start=1):
        hit.fused_rank = rank
    return hits
