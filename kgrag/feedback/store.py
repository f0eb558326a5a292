"""Ratings of answers, kept beside the knowledge base in ``<data_dir>/feedback.sqlite``.

One row per rating: the question, the answer text, its citations, the chunks the person marked
as right (``relevant``: each ``{chunk_id, doc_id}``), the rating, an optional comment and the
``trace_id`` of the answer (its request id, which the request log carries). It lives in the
data dir whatever the chunk/graph stores are: feedback belongs to the deployment, and the file
is tiny. It is opened as the embedded stores are (``kgrag.stores.sqlite.db``: one connection
serialized by a lock, WAL, its kind stamped in the file, a damaged file named as such).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kgrag.errors import StoreError
from kgrag.feedback.ratings import RATINGS
from kgrag.stores.sqlite.db import FEEDBACK_APP_ID, SqliteDatabase

FILE_NAME = "feedback.sqlite"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS feedback (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    rating TEXT NOT NULL,
    comment TEXT NOT NULL DEFAULT '',
    question TEXT NOT NULL,
    answer TEXT NOT NULL DEFAULT '',
    citations TEXT NOT NULL DEFAULT '[]',
    relevant TEXT NOT NULL DEFAULT '[]',
    trace_id TEXT
);
CREATE INDEX IF NOT EXISTS feedback_created ON feedback (created_at);
"""


@dataclass
class ChunkRef:
    chunk_id: str
    doc_id: str


@dataclass
class Feedback:
    rating: str
    question: str
    answer: str = ""
    comment: str = ""
    citations: list[dict[str, Any]] = field(default_factory=list)  # {n, chunk_id, doc_id, ...}
    relevant: list[ChunkRef] = field(default_factory=list)  # chunks marked right
    trace_id: str | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class FeedbackStore:
    def __init__(self, data_dir: Path | str) -> None:
        path = Path(data_dir) / FILE_NAME
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{path}: cannot open the feedback store: {exc}") from exc
        self._db = SqliteDatabase(path, app_id=FEEDBACK_APP_ID, schema_version=SCHEMA_VERSION, schema=_SCHEMA,
                                  adopt_unmarked=True)

    def add(self, item: Feedback) -> Feedback:
        if item.rating not in RATINGS:
            raise ValueError(f"rating must be one of {RATINGS}, got {item.rating!r}")
        row = (item.id, item.created_at, item.rating, item.comment, item.question, item.answer,
               json.dumps(item.citations, ensure_ascii=False),
               json.dumps([asdict(r) for r in item.relevant], ensure_ascii=False), item.trace_id)
        with self._db.write("store feedback") as conn:
            conn.execute("INSERT INTO feedback VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
        return item

    def list(self, limit: int | None = None, ratings: Sequence[str] = ()) -> list[Feedback]:
        """Oldest first; ``ratings`` keeps only those ratings."""
        sql = "SELECT * FROM feedback"
        args: list[Any] = []
        if ratings:
            sql += f" WHERE rating IN ({','.join('?' * len(ratings))})"
            args.extend(ratings)
        sql += " ORDER BY created_at, rowid"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        with self._db.read("read feedback") as conn:
            cursor = conn.execute(sql, args)
            names = [d[0] for d in cursor.description]
            rows = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
        return [_from_row(r) for r in rows]

    def close(self) -> None:
        self._db.close()


def _from_row(row: dict[str, Any]) -> Feedback:
    return Feedback(
        id=row["id"], created_at=row["created_at"], rating=row["rating"], comment=row["comment"],
        question=row["question"], answer=row["answer"], citations=json.loads(row["citations"]),
        relevant=[ChunkRef(**r) for r in json.loads(row["relevant"])], trace_id=row["trace_id"],
    )
