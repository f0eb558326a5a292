"""Neo4j graph store (on ArcadeDB's Bolt server) vs the embedded SQLite graph store, on one
knowledge base: graph transfer throughput, then ``neighbors(keys, hops)`` latency.

    .venv/bin/python benchmarks/graph_store.py /tmp/kg/hotpot [--sets 200] [--hops 2]

Starts a local ArcadeDB (arcadedb-embedded) with its Bolt listener, copies the knowledge base's
graph into it with ``kgrag.transfer.transfer_graph`` (timed: documents, entities and relations
per second), then times ``neighbors`` on the same key sets against both stores (after ten
warm-up calls each: the SQLite store builds its in-memory graph once, the JVM compiles) and
checks that both stores return the same paths. Prints one JSON object. Timings on a shared
machine are noisy. ``--arcadedb-root DIR`` keeps the copy for the next run.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _percentiles(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    pick = lambda q: ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]  # noqa: E731
    return {"p50_ms": round(pick(0.50), 2), "p95_ms": round(pick(0.95), 2), "mean_ms": round(statistics.fmean(ms), 2),
            "max_ms": round(ordered[-1], 2)}


def _key_sets(graph, n: int, seed: int) -> list[list[str]]:
    """n sets of 1–3 entity keys, drawn from entities some chunk mentions (what linking finds)."""
    keys = sorted({k for ks in graph.alias_table().values() for k in ks})
    counts = graph.entity_chunk_counts(keys)
    mentioned = [k for k in keys if counts.get(k)]
    rng = random.Random(seed)
    return [rng.sample(mentioned, rng.randint(1, 3)) for _ in range(n)]


def _time_neighbors(graph, sets: list[list[str]], hops: int, limit: int) -> tuple[list[float], list]:
    for keys in sets[:10]:  # warm-up (ArcadeDB's JIT; the SQLite store's cached graph)
        graph.neighbors(keys, hops, limit)
    ms, results = [], []
    for keys in sets:
        t = time.perf_counter()
        results.append(graph.neighbors(keys, hops, limit))
        ms.append((time.perf_counter() - t) * 1000)
    return ms, results


def _transfer(sqlite, neo4j, transfer_graph) -> dict:
    report = transfer_graph(sqlite, neo4j)
    assert not report.mismatches, report.mismatches
    g = report.target_counts
    return {
        "seconds": round(report.seconds, 1), "counts": g, "written": report.written,
        "documents_per_s": round(report.rate("documents"), 1),
        "entities_per_s": round(g["entities"] / report.seconds, 1),
        "relations_per_s": round(g["relations"] / report.seconds, 1),
        "relation_evidence_per_s": round(report.rate("relations"), 1),
        "mentions_per_s": round(report.rate("mentions"), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir", type=Path, help="knowledge base folder with graph.sqlite")
    ap.add_argument("--sets", type=int, default=200)
    ap.add_argument("--hops", type=int, default=2)
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--heap", default="2g", help="ArcadeDB JVM heap")
    ap.add_argument("--arcadedb-root", type=Path,
                    help="keep ArcadeDB's files here; a later run with the same root and the same counts skips the transfer")
    args = ap.parse_args()

    from kgrag.stores.neo4j.graph import Neo4jGraphStore
    from kgrag.stores.sqlite.graph import SqliteGraphStore
    from kgrag.testing.arcadedb import ArcadeBoltServer
    from kgrag.transfer import transfer_graph

    if not (args.data_dir / "graph.sqlite").is_file():
        sys.exit(f"{args.data_dir / 'graph.sqlite'} does not exist: ingest a corpus first")
    out: dict = {"data_dir": str(args.data_dir)}
    sqlite = SqliteGraphStore(args.data_dir / "graph.sqlite")
    with tempfile.TemporaryDirectory(prefix="kgrag-bench-arcadedb-") as tmp:
        root = args.arcadedb_root or Path(tmp)
        existing = (root / "databases" / "databases" / "bench").is_dir()
        t = time.perf_counter()
        server = ArcadeBoltServer.start(root, heap=args.heap)
        out["arcadedb_start_s"] = round(time.perf_counter() - t, 2)
        try:
            if not existing:
                server.create_database("bench")
            neo4j = Neo4jGraphStore(server.settings("bench"))
            out["server"] = neo4j.server_agent
            if existing and neo4j.stats() == sqlite.stats():
                out["transfer"] = "skipped: the database under --arcadedb-root already holds this graph"
            else:
                out["transfer"] = _transfer(sqlite, neo4j, transfer_graph)
            print(json.dumps(out["transfer"]), file=sys.stderr)
            sets = _key_sets(sqlite, args.sets, args.seed)
            sqlite_ms, sqlite_results = _time_neighbors(sqlite, sets, args.hops, args.limit)
            neo4j_ms, neo4j_results = _time_neighbors(neo4j, sets, args.hops, args.limit)
            out["neighbors"] = {
                "sets": len(sets), "hops": args.hops, "limit": args.limit,
                "mean_entities_reached": round(statistics.fmean(len(r) for r in sqlite_results), 1),
                "sqlite": _percentiles(sqlite_ms), "neo4j_arcadedb": _percentiles(neo4j_ms),
                "identical_results": sum(a == b for a, b in zip(sqlite_results, neo4j_results)),
            }
            neo4j.close()
        finally:
            server.stop()
    sqlite.close()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
