"""The in-memory entity graph of the SQLite graph store, kept current by changes, not rebuilds.

Every insert, update or delete of ``relation_evidence`` appends the touched entity pair to
``relation_changes`` (triggers: whichever code path writes — ingest, delete, alias merge or split,
in this process or another — is recorded in the same transaction). A cache that has seen changes up
to ``seq`` S re-reads only the pairs changed after S and updates those edges, so walking the graph
after one document's ingest costs milliseconds instead of a rebuild that grows with the whole graph
(``benchmarks/graph_refresh.py``; docs/decisions.md, "The graph held as arrays, caught up from a
change log, saved as a snapshot"). It rebuilds when it has never been built, when more pairs
changed than ``REBUILD_FRACTION`` of its edges (a bulk ingest: one scan is cheaper), or when the
changes it needs were pruned (the table keeps the last ``KEEP_CHANGES`` rows, pruned by a trigger
every ``PRUNE_EVERY`` rows).

The result equals a fresh build exactly (same edges, weights and types, no isolated nodes);
``tests/test_graph_cache.py`` checks that after each kind of write.
"""

from __future__ import annotations

import gc
import logging
import sqlite3
import threading
from pathlib import Path

from kgrag import heap
from kgrag.stores.graph_walk import merge_parallel_edges
from kgrag.stores.sqlite.compact_graph import (
    CompactGraph,
    load_compact_graph,
    load_snapshot,
    save_snapshot,
    snapshot_state,
)

log = logging.getLogger(__name__)

KEEP_CHANGES = 200_000
PRUNE_EVERY = 10_000
REBUILD_FRACTION = 0.25
MIN_REBUILD_CHANGES = 5_000  # below this many changed pairs, never rebuild for size alone

# Run at every open (idempotent): files written before this table existed gain it in place.
CHANGE_LOG = (
    "CREATE TABLE IF NOT EXISTS relation_changes ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT, a TEXT NOT NULL, b TEXT NOT NULL)",
    "CREATE TRIGGER IF NOT EXISTS relation_changes_insert AFTER INSERT ON relation_evidence BEGIN"
    " INSERT INTO relation_changes (a, b) VALUES"
    " (min(NEW.source_key, NEW.target_key), max(NEW.source_key, NEW.target_key)); END",
    "CREATE TRIGGER IF NOT EXISTS relation_changes_delete AFTER DELETE ON relation_evidence BEGIN"
    " INSERT INTO relation_changes (a, b) VALUES"
    " (min(OLD.source_key, OLD.target_key), max(OLD.source_key, OLD.target_key)); END",
    "CREATE TRIGGER IF NOT EXISTS relation_changes_update AFTER UPDATE ON relation_evidence BEGIN"
    " INSERT INTO relation_changes (a, b) VALUES"
    " (min(OLD.source_key, OLD.target_key), max(OLD.source_key, OLD.target_key)),"
    " (min(NEW.source_key, NEW.target_key), max(NEW.source_key, NEW.target_key)); END",
    f"CREATE TRIGGER IF NOT EXISTS relation_changes_prune AFTER INSERT ON relation_changes"
    f" WHEN NEW.seq % {PRUNE_EVERY} = 0 BEGIN"
    f" DELETE FROM relation_changes WHERE seq <= NEW.seq - {KEEP_CHANGES}; END",
)

_PAIR = ("SELECT source_key, target_key, type, sum(weight) FROM relation_evidence "
         "WHERE (source_key = ?1 AND target_key = ?2) OR (source_key = ?2 AND target_key = ?1) "
         "GROUP BY source_key, target_key, type")


class EntityGraphCache:
    """One ``CompactGraph`` per store. ``lock`` guards it: hold it while walking the graph
    (``current`` may change it in place); take it before the database lock."""

    def __init__(self, snapshot: Path | None = None) -> None:
        """``snapshot``: where the arrays are saved after a build and loaded at start (None:
        never)."""
        self.snapshot = snapshot
        self.lock = threading.RLock()
        self.graph: CompactGraph | None = None
        self.seq = 0  # the last relation change this graph reflects
        self.version: tuple[int, int] | None = None
        self.edges = 0  # undirected edges now (arrays and overlay)
        self.rebuilds = 0  # counted for tests and benchmarks
        self.snapshot_loads = 0
        self.updates = 0

    def current(self, conn: sqlite3.Connection, version: tuple[int, int]) -> CompactGraph:
        """The graph as of now; call with ``lock`` held and ``conn`` under the database lock.
        ``version`` (the store's write count, PRAGMA data_version) skips the check when the
        file has not changed since the last call. When the changes since this graph are too
        many (or pruned), a snapshot saved after them by another process — the ingest job saves
        one after a bulk write (``SqliteGraphStore.prepare_reads``) — is loaded before falling
        back to reading every relation."""
        if self.graph is not None and version == self.version:
            return self.graph
        conn.execute("BEGIN")  # one snapshot: the change log and the relations agree
        try:
            last = conn.execute("SELECT coalesce(max(seq), 0), min(seq) FROM relation_changes").fetchone()
            max_seq, min_seq = last[0], last[1]
            if self.graph is None or not self._catch_up(conn, max_seq, min_seq):
                if not self._load_snapshot(conn, min_seq) or not self._catch_up(conn, max_seq, min_seq):
                    self._rebuild(conn, max_seq)
            self.seq, self.version = max_seq, version
        finally:
            conn.execute("COMMIT")
        assert self.graph is not None
        return self.graph

    def snapshot_serves(self, conn: sqlite3.Connection) -> bool:
        """Whether a reader loading the saved snapshot now would catch up from the change log
        rather than rebuild (``_catch_up``'s rule): the snapshot is of this database, its
        changes are all still logged, and those after it are few. Reads only its small parts."""
        state = snapshot_state(self.snapshot) if self.snapshot is not None else None
        if state is None:
            return False
        seq, mark, edges = state
        if not _logged(conn, seq, mark):
            return False
        changed = conn.execute("SELECT count(*) FROM (SELECT DISTINCT a, b FROM relation_changes WHERE seq > ?)",
                               (seq,)).fetchone()[0]
        return not _too_many(changed, edges)

    def _catch_up(self, conn: sqlite3.Connection, max_seq: int, min_seq: int | None) -> bool:
        """Applies the changes after ``self.seq``; False (nothing applied) when some were pruned
        or they are so many that one full read is cheaper."""
        assert self.graph is not None
        if max_seq == self.seq:
            return True
        if min_seq is not None and min_seq > self.seq + 1:
            return False
        pairs = conn.execute("SELECT DISTINCT a, b FROM relation_changes WHERE seq > ?", (self.seq,)).fetchall()
        changed = len(pairs) + self.graph.overlay_edges  # the arrays are re-laid when the overlay is large
        if _too_many(changed, self.edges):
            return False
        self._update(conn, self.graph, pairs)
        self.seq = max_seq
        return True

    def _load_snapshot(self, conn: sqlite3.Connection, min_seq: int | None) -> bool:
        """The saved arrays, if they are of this database, newer than the graph held, and the
        log still holds every change after them (the caller then applies those changes as for
        any reader)."""
        if self.snapshot is None or min_seq is None:
            return False
        held = self.seq if self.graph is not None else -1
        loaded = load_snapshot(self.snapshot, newer_than=held)
        if loaded is None:
            return False
        graph, seq, mark = loaded
        if not _logged(conn, seq, mark) or min_seq > seq + 1:
            return False
        self.graph = None  # the old arrays can go
        self.graph, self.seq, self.edges = graph, seq, len(graph.neighbours) // 2
        self.snapshot_loads += 1
        return True

    def _rebuild(self, conn: sqlite3.Connection, max_seq: int) -> None:
        # gc.freeze after the build moves every object alive now (the graph's keys, and the
        # models, caches and modules a serving process holds) out of the collector's sight, so
        # full collections stop walking them mid-query (a p95 stall otherwise; docs/decisions.md,
        # "Start-up work"). Unfreezing first lets the previous graph be collected once dropped.
        gc.unfreeze()
        self.graph = None  # the old arrays go before the new ones are read
        self.graph = load_compact_graph(conn)
        heap.settle()
        self._save_snapshot(conn, max_seq)
        self.edges = len(self.graph.neighbours) // 2
        self.rebuilds += 1

    def _update(self, conn: sqlite3.Connection, graph: CompactGraph, pairs: list[tuple[str, str]]) -> None:
        for a, b in pairs:
            merged = merge_parallel_edges(conn.execute(_PAIR, (a, b)).fetchall()).get((a, b))
            existed = graph.edge(a, b) is not None
            if merged is not None or existed:
                graph.set_edge(a, b, merged)
                self.edges += (merged is not None) - existed
        self.updates += 1

    def _save_snapshot(self, conn: sqlite3.Connection, seq: int) -> None:
        """Best effort: a read-only data dir or a full disk costs the next start a rebuild."""
        row = conn.execute("SELECT a, b FROM relation_changes WHERE seq = ?", (seq,)).fetchone()
        if self.snapshot is None or self.graph is None or row is None:
            return
        try:
            save_snapshot(self.graph, self.snapshot, seq, (row[0], row[1]))
        except OSError as exc:
            log.warning("could not save the graph snapshot %s: %s", self.snapshot, exc)

    def drop(self) -> None:
        self.graph, self.version, self.seq, self.edges = None, None, 0, 0


def _logged(conn: sqlite3.Connection, seq: int, mark: tuple[str, str]) -> bool:
    """Whether the log still holds the change a snapshot was saved after, as that snapshot
    recorded it (a replaced or restored database will not)."""
    row = conn.execute("SELECT a, b FROM relation_changes WHERE seq = ?", (seq,)).fetchone()
    return row is not None and tuple(row) == mark


def _too_many(changed: int, edges: int) -> bool:
    """More changed pairs than catching up is worth: one full read is cheaper."""
    return changed > max(MIN_REBUILD_CHANGES, REBUILD_FRACTION * edges)
