"""Turns of conversations, kept beside the knowledge base in ``<data_dir>/conversations.sqlite``.

A client that does not want to send its ``history`` with every question names a
``conversation_id`` instead; the server appends each question (and the answer given, with the
chunks it cited: what "and the next one?" is the neighbour of) under it
and reads the earlier turns back as the history of the next question. Bounded both ways: a
conversation idle for longer than ``ttl_s`` is gone (deleted when next touched, and swept on
every write), and only its last ``max_turns`` turns are kept. Like the feedback store, it lives
in the data dir whatever the chunk/graph stores are, opened as the embedded stores are
(``kgrag.stores.sqlite.db``: one connection serialized by a lock, WAL, its kind stamped in the
file, a damaged file named as such).
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
from kgrag.stores.sqlite.db import CONVERSATIONS_APP_ID, SqliteDatabase
from kgrag.types import Turn

if TYPE_CHECKING:
    from kgrag.config import Settings

FILE_NAME = "conversations.sqlite"
SCHEMA_VERSION = 1

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
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot open the conversation store: {exc}") from exc
        self._db = SqliteDatabase(self.path, app_id=CONVERSATIONS_APP_ID, schema_version=SCHEMA_VERSION,
                                  schema=_SCHEMA, adopt_unmarked=True)
        with self._db.read("read the turns' columns") as conn:
            columns = {row[1] for row in conn.execute("PRAGMA table_info(turns)")}
        if "cited" not in columns:  # a file written before turns kept their cited chunks
            with self._db.write("add the turns' cited column") as conn:
                _add_cited(conn)

    def turns(self, conversation_id: str) -> list[Turn]:
        """The conversation's kept turns, oldest first; none when it is new or has expired."""
        with self._db.read("read the conversation") as conn:
            rows = conn.execute(
                "SELECT at, question, answer, cited FROM turns WHERE conversation_id = ? ORDER BY seq",
                (conversation_id,)).fetchall()
        if rows and self.clock() - rows[-1][0] > self.ttl_s:
            with self._db.write("forget the expired conversation") as conn:
                conn.execute("DELETE FROM turns WHERE conversation_id = ? AND "
                             "(SELECT MAX(at) FROM turns WHERE conversation_id = ?) < ?",
                             (conversation_id, conversation_id, self.clock() - self.ttl_s))
            return []
        return [Turn(question, answer, tuple(json.loads(cited))) for _, question, answer, cited in rows]

    def append(self, conversation_id: str, turn: Turn) -> None:
        """Adds a turn, keeps the last ``max_turns``, and sweeps conversations idle too long."""
        now = self.clock()
        with self._db.write("store the turn") as conn:
            (last,) = conn.execute(
                "SELECT MAX(at) FROM turns WHERE conversation_id = ?", (conversation_id,)).fetchone()
            if last is not None and now - last > self.ttl_s:
                conn.execute("DELETE FROM turns WHERE conversation_id = ?", (conversation_id,))
            (seq,) = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE conversation_id = ?",
                (conversation_id,)).fetchone()
            conn.execute("INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?)",
                         (conversation_id, seq, now, turn.question, turn.answer, json.dumps(list(turn.cited))))
            conn.execute("DELETE FROM turns WHERE conversation_id = ? AND seq <= ?",
                         (conversation_id, seq - self.max_turns))
            _sweep(conn, now - self.ttl_s)

    def close(self) -> None:
        self._db.close()


def _sweep(conn: sqlite3.Connection, before: float) -> None:
    """Deletes every conversation whose last turn is older than ``before``."""
    conn.execute(
        "DELETE FROM turns WHERE conversation_id IN (SELECT conversation_id FROM turns "
        "GROUP BY conversation_id HAVING MAX(at) < ?)", (before,))
