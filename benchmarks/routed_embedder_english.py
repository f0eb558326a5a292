"""English ingestion must not pay for the multilingual model: embeds the same English passages
with MiniLM directly and through the script-routed default embedder, alternating back to back,
and prints passages/s and the ratio (median of the rounds). Also checks e5 was never loaded.

    .venv/bin/python benchmarks/routed_embedder_english.py [--passages 400] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from kgrag.config import EmbedderSettings
from kgrag.models.embedder import build_embedder
from kgrag.models.routed import ScriptRoutedEmbedder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/bench/hotpotqa_dev500/corpus.jsonl"))
    parser.add_argument("--passages", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with args.corpus.open(encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for _, line in zip(range(args.passages), f, strict=False)]
    routed = build_embedder(EmbedderSettings())
    assert isinstance(routed, ScriptRoutedEmbedder)
    minilm = routed.fast
    minilm.embed_passages(texts[:16])  # warm up
    plain, via_router = [], []
    for _ in range(args.rounds):
        t = time.perf_counter()
        minilm.embed_passages(texts)
        plain.append(time.perf_counter() - t)
        t = time.perf_counter()
        routed.embed_corpus(texts, mixed=False)
        via_router.append(time.perf_counter() - t)
    a, b = statistics.median(plain), statistics.median(via_router)
    print(f"{len(texts)} English passages, {args.rounds} rounds, median")
    print(f"MiniLM direct : {len(texts) / a:.1f} passages/s")
    print(f"routed default: {len(texts) / b:.1f} passages/s  (time ratio {b / a:.3f})")
    print(f"multilingual model loaded: {routed._multilingual is not None}")


if __name__ == "__main__":
    main()
