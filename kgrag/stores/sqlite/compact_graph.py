"""The embedded store's entity graph in compressed sparse rows, with a small overlay of changes.

Why not a networkx graph: its per-edge dicts cost ~410 bytes per undirected edge (~2 GB for a
100k-passage corpus) and building it is Python work per edge. Here an edge costs 2 × (4 + 8 + 2)
bytes in numpy arrays (neighbour index, weight, type id), rows sorted by neighbour for binary
search; figures in docs/decisions.md, "The graph held as arrays, caught up from a change log,
saved as a snapshot". networkx stays the reference: ``tests/test_graph_cache.py`` compares this
graph with ``graph_walk.build_entity_graph`` after every kind of write.

Changes since the arrays were built live in ``overlay`` (node → neighbour → (weight, type), or
None for a removed edge) and win over the arrays; the cache rebuilds the arrays when the overlay
grows large. Nodes never appear without an edge (as in a fresh build): ``__contains__`` and
``nodes`` skip nodes whose every edge was removed.
"""

from __future__ import annotations

import json
import sqlite3
import zipfile
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

import numpy as np

from kgrag.atomic_files import written_whole
from kgrag.stores.graph_walk import Reached

Edge = tuple[float, str]  # (merged weight, heaviest relation type)


class CompactGraph:
    def __init__(self, keys: list[str], indptr: np.ndarray, neighbours: np.ndarray, weights: np.ndarray,
                 type_ids: np.ndarray, types: list[str]):
        self.keys, self.types = keys, types
        self.index = {k: i for i, k in enumerate(keys)}
        self.indptr, self.neighbours, self.weights, self.type_ids = indptr, neighbours, weights, type_ids
        self.overlay: dict[str, dict[str, Edge | None]] = {}
        self.overlay_edges = 0  # edges set or removed through the overlay since the build

    # -- reads -----------------------------------------------------------------------------
    def adjacent(self, key: str) -> Iterator[tuple[str, float, str]]:
        """(neighbour, weight, type) of every edge at ``key``: the arrays, then the overlay."""
        patch = self.overlay.get(key)
        i = self.index.get(key)
        if i is not None:
            lo, hi = int(self.indptr[i]), int(self.indptr[i + 1])
            keys, types = self.keys, self.types
            rows = zip(self.neighbours[lo:hi].tolist(), self.weights[lo:hi].tolist(),
                       self.type_ids[lo:hi].tolist(), strict=True)
            for j, weight, t in rows:
                v = keys[j]
                if patch is None or v not in patch:
                    yield v, weight, types[t]
        if patch:
            for v, edge in patch.items():
                if edge is not None:
                    yield v, edge[0], edge[1]

    def edge(self, a: str, b: str) -> Edge | None:
        patch = self.overlay.get(a)
        if patch is not None and b in patch:
            return patch[b]
        i, j = self.index.get(a), self.index.get(b)
        if i is None or j is None:
            return None
        lo, hi = int(self.indptr[i]), int(self.indptr[i + 1])
        pos = lo + int(np.searchsorted(self.neighbours[lo:hi], j))
        if pos < hi and self.neighbours[pos] == j:
            return float(self.weights[pos]), self.types[self.type_ids[pos]]
        return None

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and next(self.adjacent(key), None) is not None

    def nodes(self) -> set[str]:
        return {k for k in set(self.keys) | set(self.overlay) if k in self}

    def edges(self) -> Iterator[tuple[str, str, float, str]]:
        """Each undirected edge once, as (a, b, weight, type) with a < b."""
        for a in sorted(set(self.keys) | set(self.overlay)):
            for b, weight, rel_type in self.adjacent(a):
                if a < b:
                    yield a, b, weight, rel_type

    def select_level(self, frontier: Mapping[str, float], reached: Collection[str], room: int) -> list[Reached]:
        """``graph_walk.best_paths``' choice of one level, over the arrays with numpy: the same
        entities, scores, predecessors and edges as its Python loop (``best_paths`` checks it in
        ``tests/test_graph_cache.py``), without a Python step per edge — a hub entity of a 100k
        passage corpus has tens of thousands of edges (docs/scaling-out.md, "When to scale out").
        Overlay edges (changes since the build) are merged in Python."""
        known = sorted((self.index[u], frontier[u]) for u in frontier if u in self.index)
        rows = np.array([i for i, _ in known], dtype=np.int64)
        lo, hi = self.indptr[rows], self.indptr[rows + 1]
        counts = hi - lo
        pos = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        u = np.repeat(rows, counts)
        v = self.neighbours[pos].astype(np.int64)
        score = np.repeat(np.array([f for _, f in known], dtype=np.float64), counts) + self.weights[pos]
        drop = np.zeros(len(v), dtype=bool)
        reached_rows = [self.index[k] for k in reached if k in self.index]
        if reached_rows:
            drop |= np.isin(v, np.array(reached_rows, dtype=np.int64))
        for i in {int(r) for r in rows if self.keys[r] in self.overlay}:  # edges the overlay replaced
            patched = [self.index[k] for k in self.overlay[self.keys[i]] if k in self.index]
            drop |= (u == i) & np.isin(v, np.array(patched, dtype=np.int64))
        keep = ~drop
        u, v, score, pos = u[keep], v[keep], score[keep], pos[keep]
        # best predecessor per neighbour: highest score, ties to the smallest predecessor
        order = np.lexsort((u, -score, v))
        first = order[np.r_[True, v[order][1:] != v[order][:-1]]] if len(order) else order
        candidates: dict[str, tuple[float, str, Edge]] = {}
        if len(first):
            # every candidate that can place among the best ``room`` (ties at the cut included)
            cut = np.sort(score[first])[::-1][min(room, len(first)) - 1]
            for j in first[score[first] >= cut].tolist():
                candidates[self.keys[int(v[j])]] = (float(score[j]), self.keys[int(u[j])],
                                                    (float(self.weights[pos[j]]), self.types[self.type_ids[pos[j]]]))
        for key in sorted(k for k in frontier if k in self.overlay):
            for w, edge in self.overlay[key].items():
                if edge is None or w in reached:
                    continue
                s, best = frontier[key] + edge[0], candidates.get(w)
                if best is None or s > best[0] or (s == best[0] and key < best[1]):
                    candidates[w] = (s, key, edge)
        chosen = sorted(candidates, key=lambda w: (-candidates[w][0], w))[:room]
        return [(w, *candidates[w]) for w in chosen]

    def memory_bytes(self) -> int:
        return sum(a.nbytes for a in (self.indptr, self.neighbours, self.weights, self.type_ids))

    # -- changes ---------------------------------------------------------------------------
    def set_edge(self, a: str, b: str, edge: Edge | None) -> None:
        """Sets (or with None removes) the undirected edge a–b."""
        self.overlay.setdefault(a, {})[b] = edge
        self.overlay.setdefault(b, {})[a] = edge
        self.overlay_edges += 1


def load_compact_graph(conn: sqlite3.Connection) -> CompactGraph:
    """Reads ``relation_evidence`` once and merges parallel relations as
    ``graph_walk.merge_parallel_edges`` does (either direction, one undirected edge: weight = the
    sum, type = the heaviest, ties to the smallest type name), with numpy sorts, not dicts."""
    types = [r[0] for r in conn.execute("SELECT DISTINCT type FROM relation_evidence ORDER BY type")]
    type_id = {t: i for i, t in enumerate(types)}
    keys: list[str] = []
    index: dict[str, int] = {}

    def node(key: str) -> int:
        i = index.get(key)
        if i is None:
            i = index[key] = len(keys)
            keys.append(key)
        return i

    rows = conn.execute("SELECT source_key, target_key, type, sum(weight) FROM relation_evidence "
                        "GROUP BY source_key, target_key, type")
    src, dst, tid, wts = [], [], [], []
    for s, t, rel_type, weight in rows:
        src.append(node(s))
        dst.append(node(t))
        tid.append(type_id[rel_type])
        wts.append(weight)
    # Key order must not depend on row order: renumber nodes by sorted key.
    order = np.argsort(np.array(keys, dtype=object)) if keys else np.zeros(0, dtype=np.int64)
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = np.arange(len(keys))
    sorted_keys = [keys[i] for i in order.tolist()]
    a0, b0 = rank[np.array(src, dtype=np.int64)], rank[np.array(dst, dtype=np.int64)]
    lo, hi = np.minimum(a0, b0), np.maximum(a0, b0)
    return _from_pairs(sorted_keys, lo, hi, np.array(tid, dtype=np.int64), np.array(wts, dtype=np.float64), types)


def _from_pairs(keys: list[str], lo: np.ndarray, hi: np.ndarray, tid: np.ndarray, wts: np.ndarray,
                types: list[str]) -> CompactGraph:
    n = len(keys)
    # 1. sum weights per (pair, type): both directions of a relation type add up
    pair = lo * max(n, 1) + hi
    order = np.lexsort((tid, pair))
    pair, tid, wts = pair[order], tid[order], wts[order]
    starts = np.flatnonzero(np.r_[True, (pair[1:] != pair[:-1]) | (tid[1:] != tid[:-1])]) if len(pair) else np.zeros(0, dtype=np.int64)
    pt_pair, pt_type, pt_weight = pair[starts], tid[starts], np.add.reduceat(wts, starts) if len(starts) else wts
    # 2. per pair: total weight, heaviest type (ties: smallest type id = smallest name)
    order = np.lexsort((pt_type, -pt_weight, pt_pair))
    pt_pair, pt_type, pt_weight = pt_pair[order], pt_type[order], pt_weight[order]
    firsts = np.flatnonzero(np.r_[True, pt_pair[1:] != pt_pair[:-1]]) if len(pt_pair) else np.zeros(0, dtype=np.int64)
    e_pair, e_type = pt_pair[firsts], pt_type[firsts]
    e_weight = np.add.reduceat(pt_weight, firsts) if len(firsts) else pt_weight
    a, b = e_pair // max(n, 1), e_pair % max(n, 1)
    # 3. both directions, grouped by row, neighbours ascending
    rows, cols = np.r_[a, b], np.r_[b, a]
    order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(indptr, rows + 1, 1)
    return CompactGraph(keys, np.cumsum(indptr), cols.astype(np.int32),
                        np.r_[e_weight, e_weight][order].astype(np.float64),
                        np.r_[e_type, e_type][order].astype(np.int16), types)


# -- snapshot: what a restarted server loads instead of re-reading every relation ------------
SNAPSHOT_FORMAT = 1


def save_snapshot(graph: CompactGraph, path: Path, seq: int, mark: tuple[str, str]) -> None:
    """Writes the arrays (overlay excluded: call right after a build) atomically. ``seq`` is the
    last relation change the graph reflects and ``mark`` that change's pair: a reader checks the
    database still has that row before trusting the file (a replaced or restored database
    will not)."""
    meta = {"format": SNAPSHOT_FORMAT, "seq": seq, "mark": list(mark), "types": graph.types}
    with written_whole(path) as partial, partial.open("wb") as f:
        np.savez(f, indptr=graph.indptr, neighbours=graph.neighbours, weights=graph.weights,
                 type_ids=graph.type_ids, keys=_text_array(json.dumps(graph.keys, ensure_ascii=False)),
                 meta=_text_array(json.dumps(meta)))


def load_snapshot(path: Path, newer_than: int = -1) -> tuple[CompactGraph, int, tuple[str, str]] | None:
    """(graph, seq, mark), or None when there is no readable snapshot of this format, or only
    one reflecting changes up to ``newer_than`` or fewer (then its arrays are not read)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(data["meta"].tobytes().decode("utf-8"))
            if meta.get("format") != SNAPSHOT_FORMAT or int(meta["seq"]) <= newer_than:
                return None
            keys = json.loads(data["keys"].tobytes().decode("utf-8"))
            graph = CompactGraph(keys, data["indptr"], data["neighbours"], data["weights"], data["type_ids"],
                                 meta["types"])
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None
    return graph, int(meta["seq"]), (meta["mark"][0], meta["mark"][1])


def snapshot_state(path: Path) -> tuple[int, tuple[str, str], int] | None:
    """(seq, mark, undirected edges) of a readable snapshot of this format, reading only its
    metadata and offsets (not the 240 MB of a 100k passage graph); None when there is none."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(data["meta"].tobytes().decode("utf-8"))
            if meta.get("format") != SNAPSHOT_FORMAT:
                return None
            edges = int(data["indptr"][-1]) // 2
    except (OSError, ValueError, KeyError, IndexError, zipfile.BadZipFile):
        return None
    return int(meta["seq"]), (meta["mark"][0], meta["mark"][1]), edges


def _text_array(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
