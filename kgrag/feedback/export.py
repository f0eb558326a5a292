"""Rated questions → ``queries.jsonl`` in the ``shared/bench`` format.

A question's gold passages (``gold_ids``, document ids: what ``kgrag eval`` scores recall on)
are the documents of the chunks the person marked as right; when they marked none but rated
the answer ``helpful``, the cited chunks are taken as right. Feedback without either (e.g.
"wrong" with no source marked) says what is not the answer, not what is: it is left out and
counted. When one question was rated more than once, the latest rating decides. The chunk ids
themselves travel in ``meta.gold_chunk_ids``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgrag.feedback.store import Feedback


@dataclass
class ExportResult:
    records: list[dict[str, Any]] = field(default_factory=list)
    without_gold: list[str] = field(default_factory=list)  # feedback ids left out
    superseded: int = 0  # older ratings of a question rated again


def gold_chunks(item: Feedback) -> list[tuple[str, str]]:
    """(chunk id, doc id) pairs taken as right for this rating, first mention first."""
    if item.relevant:
        pairs = [(r.chunk_id, r.doc_id) for r in item.relevant]
    elif item.rating == "helpful":
        pairs = [(c["chunk_id"], c["doc_id"]) for c in item.citations if c.get("chunk_id") and c.get("doc_id")]
    else:
        pairs = []
    return list(dict.fromkeys(pairs))


def to_record(item: Feedback) -> dict[str, Any] | None:
    pairs = gold_chunks(item)
    if not pairs:
        return None
    return {
        "id": f"fb-{item.id}",
        "question": item.question,
        "answers": [],  # the system's answer is not a gold answer; it stays in meta
        "gold_ids": list(dict.fromkeys(doc for _, doc in pairs)),
        "meta": {"source": "feedback", "rating": item.rating, "comment": item.comment,
                 "gold_chunk_ids": [chunk for chunk, _ in pairs], "answer": item.answer,
                 "trace_id": item.trace_id, "created_at": item.created_at},
    }


def export_queries(items: Sequence[Feedback]) -> ExportResult:
    result = ExportResult()
    latest: dict[str, Feedback] = {}
    for item in items:  # oldest first: a later rating of the same question replaces it
        key = " ".join(item.question.split()).casefold()
        if key in latest:
            result.superseded += 1
        latest[key] = item
    for item in latest.values():
        record = to_record(item)
        if record is None:
            result.without_gold.append(item.id)
        else:
            result.records.append(record)
    return result


def write_jsonl(records: Sequence[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
