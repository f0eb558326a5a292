"""Per-stage latency of the retrieval pipeline (what /v1/retrieve runs), p50/p95 over questions.

    .venv/bin/python benchmarks/retrieval_latency.py --data-dir /tmp/kg/hotpot \
        ../shared/bench/hotpotqa_dev500/queries.jsonl --limit 200

The knowledge base must already hold the corpus (``kgrag --data-dir DIR ingest corpus.jsonl``).
Models load and the caches warm (one untimed query), then the heap settles as in the server
(``kgrag.heap.settle``), before timing. To compare two versions of the code on one knowledge
base, run each from its own checkout (``PYTHONPATH=<checkout>``), alternating. Stages overlap: dense runs
in parallel with linking and the other paths, so stages do not add up to ``total``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("queries", type=Path)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--rerank", action="store_true", help="run the configured reranker too")
    args = parser.parse_args()

    from kgrag.components import Components
    from kgrag.config import load_settings

    components = Components(load_settings(data_dir=args.data_dir))
    retriever = components.retriever
    questions = []
    with args.queries.open(encoding="utf-8") as f:
        for line in f:
            questions.append(json.loads(line)["question"])
            if len(questions) == args.limit:
                break
    retriever.retrieve(questions[0], top_k=args.top_k, rerank=args.rerank)  # warm caches
    from kgrag import heap

    heap.settle()  # as the server does after its warm-up (README "Sizing": a third of the time)
    timings: dict[str, list[float]] = {}
    wall = []
    for q in questions:
        t = time.perf_counter()
        result = retriever.retrieve(q, top_k=args.top_k, rerank=args.rerank)
        wall.append((time.perf_counter() - t) * 1000)
        for stage, ms in result.timings_ms.items():
            timings.setdefault(stage, []).append(ms)
    print(f"{len(questions)} questions, knowledge base {args.data_dir} "
          f"({components.chunk_index.count(searchable_only=True)} searchable chunks), "
          f"reranker: {retriever.reranker.name if args.rerank and retriever.reranker else 'none'}")
    print(f"{'stage':10s} {'p50 ms':>9s} {'p95 ms':>9s} {'mean ms':>9s}")
    for stage, values in timings.items():
        print(f"{stage:10s} {statistics.median(values):9.1f} {percentile(values, 95):9.1f} "
              f"{statistics.fmean(values):9.1f}")
    total = timings["total"]
    graph = timings.get("graph", [0.0])
    print(f"graph share of total: p50 {statistics.median(graph) / statistics.median(total):.0%}, "
          f"p95 {percentile(graph, 95) / percentile(total, 95):.0%}")
    components.close()


if __name__ == "__main__":
    main()
