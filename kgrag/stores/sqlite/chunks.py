"""Embedded ChunkIndex: one SQLite file for chunks, vectors and an FTS5 BM25 index.

BM25: FTS5 indexes text that ``kgrag.text.analyze`` already turned into space-separated terms
(stemmed English, jieba-segmented Chinese), so index and query share one analysis and FTS5's
``unicode61`` tokenizer only splits on those spaces (a CJK word such as 最近 is one token;
``remove_diacritics 0`` keeps the analyzer's terms exactly). Two FTS columns, heading (title +
section path) and body, let ``bm25()`` weight headings.

Dense: exact cosine kNN with numpy over an in-memory float32 matrix of every searchable
chunk's vector (``kgrag.stores.sqlite.dense``: column blocks, zero ones skipped), loaded lazily. Inserts append to it; replacements and deletes drop it and it is
reloaded at the next search (cheap: one query, one ``frombuffer``), which keeps a big ingest
from rebuilding it per batch.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgrag.facets import FacetCatalog
from kgrag.stores.base import StoreError, check_vectors
from kgrag.stores.filters import SearchFilter
from kgrag.stores.sqlite.chunk_filters import filter_sql, read_facet_catalog
from kgrag.stores.sqlite.db import CHUNK_INDEX_APP_ID, IN_JSON, SqliteDatabase, id_list, to_json
from kgrag.stores.sqlite.dense import DenseMatrix, matrix_of_rows
from kgrag.text.analyze import analyze, segment
from kgrag.types import Chunk, ScoredId

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE chunks (
    pk INTEGER PRIMARY KEY,          -- stable integer id: the FTS rowid (survives VACUUM)
    id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL,
    text TEXT NOT NULL,
    source TEXT NOT NULL,
    title TEXT NOT NULL,
    section_path TEXT NOT NULL,
    page INTEGER,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    parent_id TEXT,
    is_parent INTEGER NOT NULL,
    metadata TEXT NOT NULL
);
CREATE INDEX chunks_doc_id ON chunks (doc_id);
CREATE INDEX chunks_source ON chunks (source);
CREATE TABLE vectors (chunk_id TEXT PRIMARY KEY, vec BLOB NOT NULL) WITHOUT ROWID;
CREATE VIRTUAL TABLE chunk_fts USING fts5 (heading, body, tokenize = 'unicode61 remove_diacritics 0')
"""

_COLUMNS = (
    "id", "doc_id", "text", "source", "title", "section_path", "page", "start", '"end"',
    "ordinal", "parent_id", "is_parent", "metadata",
)
_COLUMNS_SQL = ", ".join(_COLUMNS)


class SqliteChunkIndex:
    """ChunkIndex in one SQLite file. ``dim`` (optional) pins the vector dimension up front;
    otherwise the first upsert with vectors fixes it. ``heading_weight`` is the BM25 weight of
    the title/section column relative to the body (1.0)."""

    def __init__(self, path: Path | str, dim: int | None = None, heading_weight: float = 2.0,
                 dense_approx_from: int | None = None):
        """``dense_approx_from``: dense search over this many vectors or more rescores the
        candidates of a projection (``DenseMatrix.search``); None: always exact."""
        if heading_weight <= 0:
            raise StoreError(f"heading_weight must be positive, got {heading_weight}")
        self._db = SqliteDatabase(
            path, app_id=CHUNK_INDEX_APP_ID, schema_version=SCHEMA_VERSION, schema=SCHEMA
        )
        self.path = self._db.path
        self.heading_weight = float(heading_weight)
        self.dense_approx_from = dense_approx_from
        self._dim = self._stored_dim()
        if dim is not None and self._dim is not None and dim != self._dim:
            self._db.close()
            raise StoreError(f"{self.path}: index holds {self._dim}-dim vectors, asked for dim={dim}")
        self._requested_dim = dim
        self._dense: DenseMatrix | None = None  # None: load at next dense search
        self._dense_appended: list[DenseMatrix] = []
        self._seen_data_version = self._db.data_version()
        self.dense_catch_ups = 0  # another connection's commits applied without a reload (tests)

    # -- writes ----------------------------------------------------------------------------
    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> None:
        self._write_chunks(chunks, vectors, None)

    def replace_document(self, doc_id: str, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> int:
        """One transaction: ``chunks`` come in, every other chunk of ``doc_id`` goes; returns how
        many of those went."""
        return self._write_chunks(chunks, vectors, doc_id)

    def _write_chunks(self, chunks: Sequence[Chunk], vectors: np.ndarray | None, replace_doc: str | None) -> int:
        chunks = list(chunks)
        searchable = [c for c in chunks if c.searchable]
        matrix = check_vectors(str(self.path), vectors, len(searchable))
        _check_unique_ids(chunks)
        # Analysis (jieba, stemming) is the slow part: done before taking the lock.
        rows = [_chunk_row(c) for c in chunks]
        fts_rows = [(segment(c.heading), segment(c.text)) for c in searchable]
        with self._db.lock:  # held past the commit so the dense cache update is atomic with it
            what = "upsert chunks" if replace_doc is None else f"replace the chunks of {replace_doc!r}"
            with self._db.write(what) as conn:
                removed = 0 if replace_doc is None else self._delete_where(
                    conn, "doc_id = json_extract(?1, '$[0]') AND id NOT IN (SELECT value FROM json_each(?1, '$[1]'))",
                    json.dumps([replace_doc, [c.id for c in chunks]], ensure_ascii=False))
                replaced = removed + self._delete_where(
                    conn, f"id {IN_JSON}", id_list(c.id for c in chunks)
                )
                pks = _next_pks(conn, len(chunks))
                conn.executemany(
                    f"INSERT INTO chunks (pk, {_COLUMNS_SQL}) VALUES (?{', ?' * len(_COLUMNS)})",
                    [(pk, *row) for pk, row in zip(pks, rows)],
                )
                searchable_pks = [pk for c, pk in zip(chunks, pks) if c.searchable]
                conn.executemany(
                    "INSERT INTO chunk_fts (rowid, heading, body) VALUES (?, ?, ?)",
                    [(pk, h, b) for pk, (h, b) in zip(searchable_pks, fts_rows)],
                )
                has_vectors = matrix is not None and len(searchable) > 0
                if has_vectors:
                    conn.executemany(
                        "INSERT INTO vectors (chunk_id, vec) VALUES (?, ?)",
                        [(c.id, row.tobytes()) for c, row in zip(searchable, matrix)],
                    )
                    self._dim = self._fix_dim(conn, matrix.shape[1])
                    _count_vectors(conn, len(searchable))
            if replaced:
                self._dense = None
            elif self._dense is not None and has_vectors:
                self._dense_appended.append(
                    DenseMatrix.build(searchable_pks, [c.id for c in searchable], matrix)
                )
        return removed

    def delete_document(self, doc_id: str) -> int:
        with self._db.lock:
            with self._db.write(f"delete document {doc_id!r}") as conn:
                removed = self._delete_where(conn, "doc_id = ?", doc_id)
            if removed:
                self._dense = None
        return removed

    def _delete_where(self, conn: sqlite3.Connection, where: str, param: Any) -> int:
        """Remove chunks matching ``where`` with their FTS rows and vectors; returns the count."""
        doomed = conn.execute(f"SELECT pk, id FROM chunks WHERE {where}", (param,)).fetchall()
        if doomed:
            conn.executemany("DELETE FROM chunk_fts WHERE rowid = ?", [(pk,) for pk, _ in doomed])
            gone = conn.executemany("DELETE FROM vectors WHERE chunk_id = ?", [(cid,) for _, cid in doomed]).rowcount
            _count_vectors(conn, -gone)
            conn.executemany("DELETE FROM chunks WHERE pk = ?", [(pk,) for pk, _ in doomed])
        return len(doomed)

    # -- reads -----------------------------------------------------------------------------
    def get(self, ids: Sequence[str]) -> list[Chunk]:
        with self._db.read("get chunks") as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS_SQL} FROM chunks WHERE id {IN_JSON}",
                (id_list(ids),),
            ).fetchall()
        found = {row[0]: _chunk_from_row(row) for row in rows}
        return [found[i] for i in ids if i in found]

    def chunk_ids_by_document(self) -> dict[str, set[str]]:
        with self._db.read("list chunk ids") as conn:
            out: dict[str, set[str]] = {}
            for doc_id, chunk_id in conn.execute("SELECT doc_id, id FROM chunks"):
                out.setdefault(doc_id, set()).add(chunk_id)
            return out

    def document_ids(self) -> set[str]:
        with self._db.read("list document ids") as conn:
            return {r[0] for r in conn.execute("SELECT DISTINCT doc_id FROM chunks")}

    def count(self, searchable_only: bool = False) -> int:
        """Kept until a write through this object or a commit by another connection: the graph
        path asks on every question, and counting scanned the table (75 ms at 67k chunks)."""
        where = "WHERE is_parent = 0" if searchable_only else ""
        with self._db.read("count chunks") as conn:
            return self._db.kept(conn, ("count", searchable_only),
                                 lambda: int(conn.execute(f"SELECT count(*) FROM chunks {where}").fetchone()[0]))

    def iter_chunks(self, batch_size: int = 500) -> Iterator[tuple[Chunk, np.ndarray | None]]:
        """Pages by pk so the lock is held per batch, not for the whole iteration."""
        after = 0
        while True:
            with self._db.read("iterate chunks") as conn:
                rows = conn.execute(
                    f"SELECT c.pk, {', '.join('c.' + col for col in _COLUMNS)}, v.vec "
                    "FROM chunks c LEFT JOIN vectors v ON v.chunk_id = c.id "
                    "WHERE c.pk > ? ORDER BY c.pk LIMIT ?",
                    (after, batch_size),
                ).fetchall()
            if not rows:
                return
            for row in rows:
                vec = None if row[-1] is None else np.frombuffer(row[-1], dtype=np.float32).copy()
                yield _chunk_from_row(row[1:-1]), vec
            after = rows[-1][0]

    def facet_catalog(self) -> FacetCatalog:
        """The distinct doc types, tags and languages of the searchable chunks and the span of
        their dates (``kgrag.facets.FacetCatalog``); one scan of the metadata column each."""
        with self._db.read("read the facet catalog") as conn:
            return read_facet_catalog(conn)

    # -- search ----------------------------------------------------------------------------
    def search_bm25(self, query: str, k: int, filters: SearchFilter | None = None) -> list[ScoredId]:
        where, params = filter_sql(filters)
        terms = list(dict.fromkeys(analyze(query)))
        if k <= 0 or not terms:
            return []
        # Every term is an FTS5 string literal: user input can never become FTS5 syntax.
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        with self._db.read("BM25 search") as conn:
            if where:
                rows = conn.execute(
                    "SELECT c.id, bm25(chunk_fts, ?, 1.0) AS rank FROM chunk_fts "
                    "JOIN chunks c ON c.pk = chunk_fts.rowid "
                    f"WHERE chunk_fts MATCH ? AND {where} ORDER BY rank LIMIT ?",
                    (self.heading_weight, match, *params, k),
                ).fetchall()
            else:
                rows = _ids_of_ranked(conn, conn.execute(
                    "SELECT rowid, bm25(chunk_fts, ?, 1.0) AS rank FROM chunk_fts "
                    "WHERE chunk_fts MATCH ? ORDER BY rank LIMIT ?",
                    (self.heading_weight, match, k),
                ).fetchall())
        # FTS5's bm25() is negated (lower is better); ScoredId wants higher is better.
        return [ScoredId(cid, -rank) for cid, rank in rows]

    def search_dense(
        self, vector: np.ndarray, k: int, filters: SearchFilter | None = None
    ) -> list[ScoredId]:
        where, params = filter_sql(filters)
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._db.read("dense search") as conn:
            dense = self._dense_matrix(conn)
            allowed = None
            if where:
                allowed = np.fromiter(
                    (r[0] for r in conn.execute(f"SELECT c.pk FROM chunks c WHERE {where}", params)),
                    dtype=np.int64,
                )
        if dense is None or k <= 0:
            return []
        if query.shape[0] != dense.dim:
            raise StoreError(
                f"{self.path}: query vector has dim {query.shape[0]}, index holds "
                f"{dense.dim}-dim vectors"
            )
        norm = float(np.linalg.norm(query))
        best = dense.search(query / norm if norm else query, k, allowed, self.dense_approx_from)
        return [ScoredId(dense.ids[row], score) for row, score in best]

    def prepare_reads(self) -> None:
        """Reads the dense matrix (3.1 s at 131k chunks) before a first search needs it."""
        with self._db.read("load the dense matrix") as conn:
            self._dense_matrix(conn)

    def holds_dense_columns(self, *ranges: tuple[int, int]) -> bool:
        """From the in-memory matrix (``DenseMatrix.holds_columns``)."""
        with self._db.read("dense columns") as conn:
            dense = self._dense_matrix(conn)
        return dense is not None and dense.holds_columns(*ranges)

    def _dense_matrix(self, conn: sqlite3.Connection) -> DenseMatrix | None:
        """The current matrix (caller holds the lock); reloaded after deletes, replacements or
        a commit from another connection."""
        if self._dense is not None and self._dense_appended:  # this connection's rows first
            self._dense = self._dense.extended(self._dense_appended)
            self._dense_appended = []
        data_version = conn.execute("PRAGMA data_version").fetchone()[0]
        if data_version != self._seen_data_version:
            self._seen_data_version = data_version
            self._dim = self._stored_dim()
            self._dense = self._caught_up(conn, self._dense) if self._dense is not None else None
        if self._dense is None:
            rows = conn.execute(
                "SELECT c.pk, c.id, v.vec FROM vectors v JOIN chunks c ON c.id = v.chunk_id ORDER BY c.pk"
            ).fetchall()
            self._dense_appended = []
            if not rows:
                return None
            self._dense = matrix_of_rows(rows, spare=True)
        return self._dense

    def _caught_up(self, conn: sqlite3.Connection, dense: DenseMatrix) -> DenseMatrix | None:
        """The matrix after another connection's commit, or None (reload it whole). Keys are
        never reused, so rows can only have gone at or below the matrix's last key and only
        come above it: when the stored vector count is the matrix's plus the rows above, nothing
        went, and reading those rows is enough (the question after a one-document ingest into a
        100k passage base re-read all 131k vectors: 2.7 s)."""
        stored = conn.execute("SELECT value FROM meta WHERE key = 'vectors'").fetchone()
        last = int(dense.pks[-1]) if len(dense) else 0
        rows = conn.execute(
            # CROSS JOIN keeps chunks outside: a key range, then each vector by its key (the planner
            # otherwise scanned every vector: 0.66 s at 67k chunks)
            "SELECT c.pk, c.id, v.vec FROM chunks c CROSS JOIN vectors v ON v.chunk_id = c.id WHERE c.pk > ? ORDER BY c.pk",
            (last,),
        ).fetchall()
        if stored is None or int(stored[0]) != len(dense) + len(rows):
            return None
        self.dense_catch_ups += 1
        return dense.extended([matrix_of_rows(rows)]) if rows else dense

    # -- dimension -------------------------------------------------------------------------
    def _fix_dim(self, conn: sqlite3.Connection, dim: int) -> int:
        """Check ``dim`` against the one stored (read inside the write transaction, so another
        process cannot fix a different one meanwhile); the first vectors written store it."""
        row = conn.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()
        expected = int(row[0]) if row else self._requested_dim
        if expected is not None and dim != expected:
            raise StoreError(f"{self.path}: vectors have dim {dim}, the index holds dim {expected}")
        if row is None:
            conn.execute("INSERT INTO meta (key, value) VALUES ('dim', ?)", (str(dim),))
        return dim

    def _stored_dim(self) -> int | None:
        with self._db.read("read vector dim") as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()
        return None if row is None else int(row[0])

    @property
    def dim(self) -> int | None:
        """Vector dimension, once fixed (by ``dim=`` or the first vectors written)."""
        return self._dim if self._dim is not None else self._requested_dim

    def problems(self) -> list[str]:
        """See ``SqliteDatabase.problems``."""
        return self._db.problems()

    def check_file(self) -> list[str]:
        """See ``FileCheck``: ``SqliteDatabase.problems`` needs no open connection."""
        return self._db.problems()

    def close(self) -> None:
        self._db.close()
        self._dense = None


def _check_unique_ids(chunks: list[Chunk]) -> None:
    seen: set[str] = set()
    for c in chunks:
        if c.id in seen:
            raise StoreError(f"chunk id {c.id!r} appears twice in one upsert")
        seen.add(c.id)


def _chunk_row(c: Chunk) -> tuple[Any, ...]:
    return (
        c.id, c.doc_id, c.text, c.source, c.title, c.section_path, c.page, c.start, c.end,
        c.ordinal, c.parent_id, int(c.is_parent), to_json(c.metadata, f"chunk {c.id!r}"),
    )


def _chunk_from_row(row: Sequence[Any]) -> Chunk:
    (cid, doc_id, text, source, title, section_path, page, start, end, ordinal, parent_id,
     is_parent, metadata) = row
    return Chunk(
        id=cid, doc_id=doc_id, text=text, source=source, title=title, section_path=section_path,
        page=page, start=start, end=end, ordinal=ordinal, parent_id=parent_id,
        is_parent=bool(is_parent), metadata=json.loads(metadata),
    )


def _next_pks(conn: sqlite3.Connection, n: int) -> list[int]:
    """Keys above every key ever given (``meta.pk_high``; older files: above the largest now),
    so a key never names two chunks: a reader can tell appended rows from replaced ones."""
    high = conn.execute("SELECT value FROM meta WHERE key = 'pk_high'").fetchone()
    largest = conn.execute("SELECT coalesce(max(pk), 0) FROM chunks").fetchone()[0]
    start = max(int(high[0]) if high else 0, largest) + 1
    if n:
        conn.execute("INSERT INTO meta (key, value) VALUES ('pk_high', ?) "
                     "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(start + n - 1),))
    return list(range(start, start + n))


def _count_vectors(conn: sqlite3.Connection, delta: int) -> None:
    """``meta.vectors``: how many vectors the file holds, kept in each write's transaction
    (counted once where an older file has none)."""
    if not delta:
        return
    if conn.execute("SELECT 1 FROM meta WHERE key = 'vectors'").fetchone() is None:
        n = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
        conn.execute("INSERT INTO meta (key, value) VALUES ('vectors', ?)", (str(n),))
        return
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = 'vectors'", (delta,))


def _ids_of_ranked(conn: sqlite3.Connection, ranked: list[tuple[int, float]]) -> list[tuple[str, float]]:
    """FTS rowids (with their ranks) → chunk ids, in the same order. Ranking the FTS rows alone
    and reading the ids of the k kept ones, rather than joining every matching row to
    ``chunks`` before the sort: about half the time at 100k passages (docs/decisions.md,
    "Query-time reads")."""
    if not ranked:
        return []
    ids = dict(conn.execute(f"SELECT pk, id FROM chunks WHERE pk {IN_JSON}", (id_list([pk for pk, _ in ranked]),)))
    return [(ids[pk], rank) for pk, rank in ranked if pk in ids]
