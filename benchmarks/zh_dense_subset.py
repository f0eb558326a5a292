"""Dense retrieval on a Chinese benchmark subset, MiniLM vs the script-routed default, on the real
SQLite chunk index (BM25 + vectors), with bm25+dense fused by RRF (k=60, as the pipeline's
fusion). For when a full ``kgrag eval`` (ingestion with entity extraction) does not fit the time.

The subset is the first ``--passages`` corpus passages and the questions whose gold passages all
lie in it, so figures are comparable between the two embedders but easier than the full set.

    .venv/bin/python benchmarks/zh_dense_subset.py --set rgb_zh_dev200 --passages 1000
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from kgrag.config import EmbedderSettings
from kgrag.models.embedder import build_embedder
from kgrag.retrieve.paths import DensePath
from kgrag.retrieve.pipeline import _dense_path
from kgrag.retrieve.types import Query
from kgrag.stores.sqlite.chunks import SqliteChunkIndex
from kgrag.types import Chunk

BENCH = Path("/work/shared/bench")


def _load(set_name: str, n_passages: int):
    with (BENCH / set_name / "corpus.jsonl").open(encoding="utf-8") as f:
        corpus = [json.loads(line) for _, line in zip(range(n_passages), f, strict=False)]
    ids = {p["id"] for p in corpus}
    with (BENCH / set_name / "queries.jsonl").open(encoding="utf-8") as f:
        queries = [q for q in map(json.loads, f) if q["gold_ids"] and set(q["gold_ids"]) <= ids]
    return corpus, queries


def _index(path: Path, corpus, vectors) -> SqliteChunkIndex:
    index = SqliteChunkIndex(path)
    chunks = [Chunk(id=p["id"], doc_id=p["id"], text=p["text"], title=p.get("title", "")) for p in corpus]
    index.upsert(chunks, vectors)
    return index


def _rrf(*rankings: list[str], k: int = 60) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, cid in enumerate(ranking, start=1):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda c: -scores[c])


def _metrics(runs: list[tuple[list[str], set[str]]]) -> dict[str, float]:
    out = {}
    for k in (1, 5, 10):
        out[f"R@{k}"] = 100 * float(np.mean([len(set(r[:k]) & g) / len(g) for r, g in runs]))
    out["hit@5"] = 100 * float(np.mean([bool(set(r[:5]) & g) for r, g in runs]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", default="rgb_zh_dev200")
    parser.add_argument("--passages", type=int, default=1000)
    args = parser.parse_args()
    corpus, queries = _load(args.set, args.passages)
    texts = [(p.get("title", "") + "\n" + p["text"]).strip() for p in corpus]
    print(f"{args.set}: first {len(corpus)} passages, {len(queries)} questions with all gold inside")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("minilm", "routed"):
            embedder = build_embedder(EmbedderSettings(name=name))
            t = time.perf_counter()
            vectors = embedder.embed_passages(texts)
            seconds = time.perf_counter() - t
            index = _index(Path(tmp) / f"{name}.sqlite", corpus, vectors)
            dense: DensePath = _dense_path(index, embedder)
            runs: dict[str, list] = {"bm25": [], "dense": [], "bm25+dense": []}
            for q in queries:
                gold = set(q["gold_ids"])
                bm25 = [h.id for h in index.search_bm25(q["question"], 50)]
                vec = [h.id for h in dense.search(Query(q["question"]), 50).hits]
                runs["bm25"].append((bm25, gold))
                runs["dense"].append((vec, gold))
                runs["bm25+dense"].append((_rrf(bm25, vec), gold))
            print(f"{name}: embedded {len(texts)} passages in {seconds:.1f} s ({len(texts) / seconds:.1f} passages/s)")
            for mode, r in runs.items():
                rows[(name, mode)] = _metrics(r)
    print("\n| embedder | mode | R@1 | R@5 | R@10 | hit@5 |\n|---|---|---:|---:|---:|---:|")
    for (name, mode), m in rows.items():
        print(f"| {name} | {mode} | " + " | ".join(f"{m[k]:.1f}" for k in ("R@1", "R@5", "R@10", "hit@5")) + " |")


if __name__ == "__main__":
    main()
