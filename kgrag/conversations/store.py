"""Turns of conversations, kept beside the knowledge base in ``<data_dir>/conversations.sqlite``.

A client that does not want to send its ``history`` with every question names a
``conversation_id`` instead; the server appends each question (and the answer given, with the
chunks it cited: what "and the next one?" is the neighbour of) under it
and reads the earlier turns back as the history of the next question. Bounded both ways: a
conversation idle for longer than ``ttl_s`` is gone (deleted when next touched, and swept on
every write), and only its last ``max_turns`` turns are kept. Like the feedback store, it lives
in the data dir whatever the chunk/graph stores are; one connection, serialized by a lock.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kgrag.errors import StoreError
from kgrag.types import Turn

if TYPE_CHECKING:
    from kgrag.config import Settings

FILE_NAME = "conversations.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS turns (
    conversation_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at REAL NOT NULL,
    question TEXT NOT NULL,
    answer TEXT,
    cited TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (conversation_id, seq)
);
CREATE INDEX IF NOT EXISTS turns_at ON turns (at);
"""
# A store written before turns kept their cited chunks gains the column (its turns cite none).
_ADD_CITED = "ALTER TABLE turns ADD COLUMN cited TEXT NOT NULL DEFAULT '[]'"


def _add_cited(conn: sqlite3.Connection) -> None:
    try:
        conn.execute(_ADD_CITED)
    except sqlite3.OperationalError as exc:
        if "duplicate column" not in str(exc):  # another process added it first
            raise


class ConversationStore:
    @classmethod
    def for_settings(cls, settings: Settings) -> ConversationStore:
        """The store in ``settings.data_dir`` with the server's TTL and turn bound (the server's
        routes and ``kgrag query --conversation-id`` keep conversations alike)."""
        return cls(settings.data_dir, ttl_s=settings.server.conversation_ttl_s,
                   max_turns=settings.server.conversation_max_turns)

    @classmethod
    def on_demand(cls, settings: Settings) -> Callable[[], ConversationStore]:
        """A function that opens ``for_settings(settings)`` on its first call (from any thread)
        and returns that one store from then on: a process that is never asked with a
        conversation id never creates the file."""
        lock = threading.Lock()
        opened: list[ConversationStore] = []

        def store() -> ConversationStore:
            with lock:
                if not opened:
                    opened.append(cls.for_settings(settings))
                return opened[0]

        return store

    def __init__(self, data_dir: Path | str, *, ttl_s: float, max_turns: int,
                 clock: Callable[[], float] = time.time) -> None:
        """``clock``: seconds since the epoch (tests pass their own to expire without waiting)."""
        self.path = Path(data_dir) / FILE_NAME
        self.ttl_s = ttl_s
        self.max_turns = max_turns
        self.clock = clock
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None,
                                         timeout=30.0)
            self._conn.executescript(_SCHEMA)
            if "cited" not in {row[1] for row in self._conn.execute("PRAGMA table_info(turns)")}:
                _add_cited(self._conn)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"{self.path}: cannot open the conversation store: {exc}") from exc

    def turns(self, conversation_id: str) -> list[Turn]:
        """The conversation's kept turns, oldest first; none when it is new or has expired."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT at, question, answer, cited FROM turns WHERE conversation_id = ? ORDER BY seq",
                (conversation_id,)).fetchall()
            if rows and self.clock() - rows[-1][0] > self.ttl_s:
                self._conn.execute("DELETE FROM turns WHERE conversation_id = ?", (conversation_id,))
                return []
        return [Turn(question, answer, tuple(json.loads(cited))) for _, question, answer, cited in rows]

    def append(self, conversation_id: str, turn: Turn) -> None:
        """Adds a turn, keeps the last ``max_turns``, and sweeps conversations idle too long."""
        now = self.clock()
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                (last,) = self._conn.execute(
                    "SELECT MAX(at) FROM turns WHERE conversation_id = ?", (conversation_id,)).fetchone()
                if last is not None and now - last > self.ttl_s:
                    self._conn.execute("DELETE FROM turns WHERE conversation_id = ?", (conversation_id,))
                (seq,) = self._conn.execute(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE conversation_id = ?",
                    (conversation_id,)).fetchone()
                self._conn.execute("INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?)",
                                   (conversation_id, seq, now, turn.question, turn.answer, json.dumps(list(turn.cited))))
                self._conn.execute("DELETE FROM turns WHERE conversation_id = ? AND seq <= ?",
                                   (conversation_id, seq - self.max_turns))
                self._sweep(now)
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._conn.execute("ROLLBACK")
                raise StoreError(f"{self.path}: cannot store the turn: {exc}") from exc

    def _sweep(self, now: float) -> None:
        """Deletes every conversation whose last turn is older than the TTL."""
        self._conn.execute(
            "DELETE FROM turns WHERE conversation_id IN (SELECT conversation_id FROM turns "
            "GROUP BY conversation_id HAVING MAX(at) < ?)", (now - self.ttl_s,))

    def close(self) -> None:
        with self._lock:
            self._conn.close()
