"""The in-memory entity graph of the SQLite graph store, kept current by changes, not rebuilds.

Every insert, update or delete of ``relation_evidence`` appends the touched entity pair to
``relation_changes`` (triggers: whichever code path writes — ingest, delete, alias merge or
split, in this process or another — is recorded in the same transaction). A cache that has seen
changes up to ``seq`` S re-reads only the pairs changed after S and updates those edges, so
walking the graph after one document's ingest costs milliseconds instead of a rebuild that grows
with the whole graph (hotpotqa_dev500, 261k relations: rebuild ~1 s; incremental: see README
"Sizing" and ``benchmarks/graph_refresh.py``). It rebuilds when it has never been built, when
more pairs changed than ``REBUILD_FRACTION`` of its edges (a bulk ingest: one scan is cheaper),
or when the changes it needs were pruned (the table keeps the last ``KEEP_CHANGES`` rows,
pruned by a trigger every ``PRUNE_EVERY`` rows).

The result equals a fresh build exactly (same edges, weights and types, no isolated nodes);
``tests/test_graph_cache.py`` checks that after each kind of write.
"""

from __future__ import annotations

import gc
import sqlite3
import threading

import networkx as nx

from kgrag.stores.graph_walk import build_entity_graph, merge_parallel_edges

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
    """One networkx graph per store. ``lock`` guards it: hold it while walking the graph
    (``current`` may change it in place); take it before the database lock."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.graph: nx.Graph | None = None
        self.seq = 0  # the last relation change this graph reflects
        self.version: tuple[int, int] | None = None
        self.edges = 0  # networkx counts edges by walking them all: kept here instead
        self.rebuilds = 0  # counted for tests and benchmarks
        self.updates = 0

    def current(self, conn: sqlite3.Connection, version: tuple[int, int]) -> nx.Graph:
        """The graph as of now; call with ``lock`` held and ``conn`` under the database lock.
        ``version`` (the store's write count, PRAGMA data_version) skips the check when the
        file has not changed since the last call."""
        if self.graph is not None and version == self.version:
            return self.graph
        conn.execute("BEGIN")  # one snapshot: the change log and the relations agree
        try:
            last = conn.execute("SELECT coalesce(max(seq), 0), min(seq) FROM relation_changes").fetchone()
            max_seq, min_seq = last[0], last[1]
            if self.graph is None or (min_seq is not None and min_seq > self.seq + 1):
                self._rebuild(conn)
            elif max_seq != self.seq:
                pairs = conn.execute("SELECT DISTINCT a, b FROM relation_changes WHERE seq > ?", (self.seq,)).fetchall()
                if len(pairs) > max(MIN_REBUILD_CHANGES, REBUILD_FRACTION * self.edges):
                    self._rebuild(conn)
                else:
                    self._update(conn, self.graph, pairs)
            self.seq, self.version = max_seq, version
        finally:
            conn.execute("COMMIT")
        return self.graph

    def _rebuild(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            "SELECT source_key, target_key, type, sum(weight) FROM relation_evidence "
            "GROUP BY source_key, target_key, type"
        ).fetchall()
        # The graph is millions of long-lived Python objects; every full (gen-2) garbage
        # collection would walk them all, stalling whichever query triggers it (measured:
        # retrieval p95 410 ms → 73 ms on hotpot with the graph frozen). Freezing moves them
        # out of the collector's sight; unfreezing first lets the old graph's reference cycles
        # be collected once it is dropped.
        gc.unfreeze()
        self.graph = None
        self.graph = build_entity_graph(rows)
        self.edges = self.graph.number_of_edges()
        gc.collect()
        gc.freeze()
        self.rebuilds += 1

    def _update(self, conn: sqlite3.Connection, graph: nx.Graph, pairs: list[tuple[str, str]]) -> None:
        for a, b in pairs:
            merged = merge_parallel_edges(conn.execute(_PAIR, (a, b)).fetchall()).get((a, b))
            if merged is not None:
                weight, rel_type = merged
                self.edges += not graph.has_edge(a, b)
                graph.add_edge(a, b, weight=weight, type=rel_type)
            elif graph.has_edge(a, b):
                graph.remove_edge(a, b)
                self.edges -= 1
                for node in (a, b):  # a fresh build has no isolated nodes
                    if graph.degree(node) == 0:
                        graph.remove_node(node)
        self.updates += 1

    def drop(self) -> None:
        self.graph, self.version, self.seq, self.edges = None, None, 0, 0
