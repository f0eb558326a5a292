"""The dense path of the embedded store as the corpus grows: exact cosine over every vector.

    .venv/bin/python benchmarks/dense_scale.py --sizes 10000,50000,100000,200000 [--queries 200]

For each size N a fresh SQLite chunk index (the real ``SqliteChunkIndex``) receives N chunks with
vectors in the default (routed) layout — a random unit MiniLM block ×1/√2 and the pad, 769
numbers — and then, from a new index object (what a restarted server opens), is searched by
``--queries`` query vectors (top 30, as retrieval asks), each filling the MiniLM block as an
English question's first vector does. Reported: write time, the first
search (the matrix load from SQLite: a server's start-up share), memory the matrix holds (RSS
growth), and search p50/p95. Exact search costs the same whatever the vectors hold (one
matrix-vector product over every row), so random vectors measure it; their texts are short.
Run it alone on the machine: it is a latency measurement.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

DIM_FAST, DIM_ML = 384, 384
DIM = DIM_FAST + DIM_ML + 1
BATCH = 2000


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def routed_rows(rng: np.random.Generator, n: int, bilingual: bool = False) -> np.ndarray:
    """English chunks: a MiniLM block and the pad; bilingual: both model blocks, no pad."""
    out = np.zeros((n, DIM), dtype=np.float32)
    for start in (0, DIM_FAST) if bilingual else (0,):
        block = rng.standard_normal((n, DIM_FAST)).astype(np.float32)
        out[:, start : start + DIM_FAST] = block / np.linalg.norm(block, axis=1, keepdims=True) / math.sqrt(2)
    if not bilingual:
        out[:, -1] = 1 / math.sqrt(2)
    return out


def fill(path: Path, n: int, rng: np.random.Generator, bilingual: bool) -> float:
    from kgrag.stores.sqlite.chunks import SqliteChunkIndex
    from kgrag.types import Chunk

    index = SqliteChunkIndex(path)
    t = time.perf_counter()
    for start in range(0, n, BATCH):
        count = min(BATCH, n - start)
        chunks = [Chunk(id=f"d{i}#c0", doc_id=f"d{i}", text=f"passage {i}", end=10) for i in range(start, start + count)]
        index.upsert(chunks, routed_rows(rng, count, bilingual))
    index.close()
    return time.perf_counter() - t


def measure(path: Path, queries: int, rng: np.random.Generator) -> dict:
    from kgrag.stores.sqlite.chunks import SqliteChunkIndex

    before = rss_mib()
    index = SqliteChunkIndex(path)
    probe = np.zeros(DIM, dtype=np.float32)
    probe[:DIM_FAST] = 1 / math.sqrt(DIM_FAST)
    t = time.perf_counter()
    index.search_dense(probe, 30)
    load_s = time.perf_counter() - t
    held = rss_mib() - before
    times = []
    for q in routed_rows(rng, queries):
        q[-1] = 0.0
        t = time.perf_counter()
        hits = index.search_dense(q, 30)
        times.append((time.perf_counter() - t) * 1000)
        assert len(hits) == 30
    index.close()
    times.sort()
    return {"first_search_s": round(load_s, 2), "matrix_rss_mib": round(held), "p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,50000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--layout", choices=("english", "bilingual"), default="english",
                    help="english: chunks hold the MiniLM block; bilingual: both blocks (a mixed corpus)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kgrag-dense-") as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"chunks-{n}.sqlite"
            write_s = fill(path, n, rng, args.layout == "bilingual")
            row = {"chunks": n, "layout": args.layout, "write_s": round(write_s, 1), **measure(path, args.queries, rng),
                   "disk_mib": round(path.stat().st_size / 2**20)}
            rows.append(row)
            print(json.dumps(row), flush=True)
            path.unlink()
    print("\n| chunks | first search (matrix load) s | matrix RSS MiB | search p50 ms | p95 ms | disk MiB |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['chunks']:,} | {r['first_search_s']} | {r['matrix_rss_mib']} | {r['p50_ms']} | {r['p95_ms']} | {r['disk_mib']} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
