"""Recall and speed of the embedded store's projected dense search against exact search, on a
real knowledge base (its own vectors, real questions embedded by its own embedder).

    .venv/bin/python benchmarks/dense_recall.py --data-dir /tmp/scale/kb-grow [--queries 200]

For each question: the exact top k (``dense_approx_from=None``) and the projected one
(``DenseMatrix.search`` with ``approx_from=1``: candidates from a projection, rescored exactly),
at k = 10 and 50; prints recall@k (share of the exact top k found), how many questions lost
any of their exact top 10, and per-search milliseconds of each. Random vectors would not do:
a projection's recall depends on the vectors having structure, as embeddings do. Run it alone
on the machine for the timings.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from kgrag.components import Components
from kgrag.config import Settings

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True, help="a knowledge base with the embedded stores")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--questions", type=Path, default=HERE.parent.parent / "shared/bench/hotpotqa_dev500/queries.jsonl")
    args = ap.parse_args()
    components = Components(Settings(data_dir=args.data_dir))
    index = components.chunk_index
    with open(args.questions, encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line, _ in zip(f, range(args.queries), strict=False)]
    with index._db.read("benchmark") as conn:
        dense = index._dense_matrix(conn)
    if dense is None:
        raise SystemExit(f"{args.data_dir} holds no vectors")
    vectors = [v.vector / np.linalg.norm(v.vector) for q in questions
               for v in components.embedder.query_vectors(q, index.holds_dense_columns)[:1]]
    dense.search(vectors[0], 10, approx_from=1)  # fits the projection (once per matrix)
    found = {10: [], 50: []}
    missed_top10 = 0
    ms: dict[str, list[float]] = {"exact": [], "projected": []}
    for v in vectors:
        t = time.perf_counter()
        exact = dense.search(v, 50)
        ms["exact"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        approx = dense.search(v, 50, approx_from=1)
        ms["projected"].append((time.perf_counter() - t) * 1000)
        for k in found:
            truth = {row for row, _ in exact[:k]}
            found[k].append(len(truth & {row for row, _ in approx[:k]}) / len(truth))
        missed_top10 += found[10][-1] < 1.0
    print(f"{len(dense):,} vectors, {len(vectors)} questions")
    for k, shares in found.items():
        print(f"recall@{k}: {100 * statistics.mean(shares):.2f} % (worst question {100 * min(shares):.0f} %)")
    print(f"questions missing any of their exact top 10: {missed_top10}")
    for name, values in ms.items():
        print(f"{name}: p50 {statistics.median(values):.2f} ms, p95 {sorted(values)[int(0.95 * len(values))]:.2f} ms")


if __name__ == "__main__":
    main()
