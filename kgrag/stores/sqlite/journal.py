"""The write journal (``kgrag.stores.consistency.WriteJournal``) in one SQLite file beside the
knowledge base (``<data_dir>/journal.sqlite``), whatever engines hold the stores.

An entry keeps what the chunk half of a write needs after the graph committed: the chunks as
JSON and the vectors as float32 bytes (a 300-chunk document with 384-dim vectors: ~0.5 MB,
kept only until the write finishes). The writer lock is ``fcntl.flock`` on ``<file>.lock``:
one writer per knowledge base across processes and threads, re-entrant within a thread.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from kgrag.errors import StoreError
from kgrag.stores.consistency import PendingWrite
from kgrag.stores.sqlite.db import JOURNAL_APP_ID, SqliteDatabase
from kgrag.types import Chunk

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE pending (
    doc_id TEXT PRIMARY KEY, hash TEXT NOT NULL, chunks TEXT NOT NULL,
    vectors BLOB, dim INTEGER
)
"""
MEMORY = ":memory:"


class SqliteWriteJournal:
    """``path`` ``:memory:``: a journal for one process's life (tests, a job built without a
    data dir): the protocol's order and rollback hold, recovery after a crash does not."""

    def __init__(self, path: Path | str):
        self._db = SqliteDatabase(path, app_id=JOURNAL_APP_ID, schema_version=SCHEMA_VERSION, schema=SCHEMA)
        self.path = self._db.path
        self._lock_path = None if self.path == MEMORY else f"{self.path}.lock"
        self._thread_lock = threading.RLock()
        self._local = threading.local()

    def begin(self, doc_id: str, hash: str, chunks: Sequence[Chunk] = (),
              vectors: np.ndarray | None = None) -> None:
        rows = json.dumps([dataclasses.asdict(c) for c in chunks], ensure_ascii=False)
        matrix = None if vectors is None else np.ascontiguousarray(vectors, dtype=np.float32)
        blob = None if matrix is None else matrix.tobytes()
        dim = None if matrix is None or matrix.ndim != 2 else matrix.shape[1]
        with self._db.write(f"journal a write of {doc_id!r}") as conn:
            conn.execute(
                "INSERT OR REPLACE INTO pending (doc_id, hash, chunks, vectors, dim) VALUES (?, ?, ?, ?, ?)",
                (doc_id, hash, rows, blob, dim),
            )

    def finish(self, doc_id: str) -> None:
        with self._db.write(f"finish the write of {doc_id!r}") as conn:
            conn.execute("DELETE FROM pending WHERE doc_id = ?", (doc_id,))

    def pending(self) -> list[PendingWrite]:
        with self._db.read("read pending writes") as conn:
            return [PendingWrite(d, h) for d, h in conn.execute("SELECT doc_id, hash FROM pending ORDER BY doc_id")]

    def payload(self, doc_id: str) -> tuple[list[Chunk], np.ndarray | None]:
        with self._db.read(f"read the pending write of {doc_id!r}") as conn:
            row = conn.execute("SELECT chunks, vectors, dim FROM pending WHERE doc_id = ?", (doc_id,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no pending write of {doc_id!r}")
        chunks = [Chunk(**c) for c in json.loads(row[0])]
        vectors = None
        if row[1] is not None:
            vectors = np.frombuffer(row[1], dtype=np.float32).reshape(-1, row[2] or 1).copy()
        return chunks, vectors

    @contextmanager
    def writing_if_idle(self) -> Iterator[bool]:
        """The writer lock if no one holds it (True), else at once False."""
        if not self._thread_lock.acquire(blocking=False):
            yield False
            return
        try:
            if getattr(self._local, "depth", 0) or self._lock_path is None:
                with self.writing():
                    yield True
                return
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    yield False
                    return
                self._local.depth = 1
                try:
                    yield True
                finally:
                    self._local.depth = 0
            finally:
                os.close(fd)
        finally:
            self._thread_lock.release()

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self._thread_lock:
            depth = getattr(self._local, "depth", 0)
            if depth or self._lock_path is None:
                self._local.depth = depth + 1
                try:
                    yield
                finally:
                    self._local.depth = depth
                return
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._local.depth = 1
                try:
                    yield
                finally:
                    self._local.depth = 0
            finally:
                os.close(fd)  # releases the lock

    def close(self) -> None:
        self._db.close()
