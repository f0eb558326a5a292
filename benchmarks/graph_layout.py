"""The embedded store's entity graph: compact arrays vs a networkx graph, same knowledge base.

    .venv/bin/python benchmarks/graph_layout.py --data-dir /tmp/kg/hotpot [--walks 200]

Reads ``relation_evidence`` of the knowledge base's graph.sqlite (read-only), builds both
layouts (networkx: ``graph_walk.build_entity_graph``; compact: ``compact_graph``), and reports
for each the build time (SQL read included), the memory it holds (RSS growth, each built in a
fresh child process so one does not inherit the other's freed pages), and 2-hop walks
(``best_paths``, limit 200, as retrieval runs them) from the same sampled entities: p50/p95,
and whether every walk returned the same paths.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import sqlite3
import statistics
import time
from pathlib import Path

ROWS = "SELECT source_key, target_key, type, sum(weight) FROM relation_evidence GROUP BY source_key, target_key, type"


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def build(layout: str, path: Path):
    from kgrag.stores.graph_walk import NetworkxAdjacency, build_entity_graph
    from kgrag.stores.sqlite.compact_graph import load_compact_graph

    conn = _connect(path)
    if layout == "networkx":
        return NetworkxAdjacency(build_entity_graph(conn.execute(ROWS).fetchall()))
    return load_compact_graph(conn)


def measure(layout: str, path: Path, starts: list[str], out) -> None:
    import gc

    import psutil

    from kgrag.stores.graph_walk import best_paths

    rss0 = psutil.Process().memory_info().rss
    t = time.perf_counter()
    graph = build(layout, path)
    build_s = time.perf_counter() - t
    gc.collect()
    held = (psutil.Process().memory_info().rss - rss0) / 2**20
    walks, results = [], []
    for key in starts:
        t = time.perf_counter()
        paths = best_paths(graph, [key], hops=2, limit=200)
        walks.append((time.perf_counter() - t) * 1000)
        results.append(sorted((k, tuple(p.nodes), tuple(p.edges)) for k, p in paths.items()))
    ordered = sorted(walks)
    out.send({"build_s": round(build_s, 2), "memory_mib": round(held), "walk_p50_ms": round(statistics.median(walks), 2),
              "walk_p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 2), "results": results})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--walks", type=int, default=200)
    args = ap.parse_args()
    path = args.data_dir / "graph.sqlite"
    conn = _connect(path)
    keys = [r[0] for r in conn.execute("SELECT DISTINCT source_key FROM relation_evidence ORDER BY source_key")]
    edges = conn.execute(f"SELECT count(*) FROM ({ROWS})").fetchone()[0]
    starts = random.Random(7).sample(keys, min(args.walks, len(keys)))
    report = {}
    ctx = mp.get_context("spawn")
    for layout in ("networkx", "compact"):
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=measure, args=(layout, path, starts, send))
        proc.start()
        report[layout] = recv.recv()
        proc.join()
    same = report["networkx"].pop("results") == report["compact"].pop("results")
    print(json.dumps({"graph": str(path), "relation_rows": edges, "walks": len(starts),
                      "same_paths": same, **report}, indent=2))


if __name__ == "__main__":
    main()
