"""Ingestion throughput: the whole job vs embedding alone, on one corpus.

    .venv/bin/python benchmarks/ingest.py ../shared/bench/hotpotqa_dev500/corpus.jsonl [--limit N]

Prints wall time, seconds per stage, the embedding-only time for the same chunk texts (same
model, same batch size, in the same process after the ingest) and the ratio total /
embedding-only (target ≤ 1.3: everything but the model should be cheap), and peak RSS.

Also the CPU seconds of each (this process and the NER worker processes), and from them the
least ratio any overlap of the stages could reach on this machine's cores: the ingest's CPU
work spread perfectly over every core, against the embedding-only wall time
(``ratio_floor_on_these_cores``). Above 1.3, no scheduling of the same work meets the target
here; only less work (or more cores) does.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--limit", type=int, default=0, help="use only the first N records of a JSONL corpus")
    args = ap.parse_args()

    from kgrag.components import Components
    from kgrag.config import Settings
    from kgrag.ingest.job import embedding_text

    with tempfile.TemporaryDirectory() as tmp:
        corpus = args.corpus
        if args.limit:
            corpus = Path(tmp) / "corpus.jsonl"
            with args.corpus.open(encoding="utf-8") as src, corpus.open("w", encoding="utf-8") as dst:
                for i, line in enumerate(src):
                    if i >= args.limit:
                        break
                    dst.write(line)
        comps = Components(Settings(data_dir=Path(tmp) / "kb"))
        t = time.perf_counter()
        _ = comps.embedder, comps.recognizer  # load models before timing stages, so "embed" is pure inference
        load_models = time.perf_counter() - t
        cpu = _cpu_self()
        report = comps.ingest_job().run([corpus], progress=sys.stderr.isatty())
        ingest_cpu = _cpu_self() - cpu
        chunks = [c for c, _ in comps.chunk_index.iter_chunks() if c.searchable]
        texts = [embedding_text(c) for c in chunks]
        t, cpu = time.perf_counter(), _cpu_self()
        comps.embedder.embed_passages(texts)
        embed_only = time.perf_counter() - t
        embed_only_cpu = _cpu_self() - cpu
        comps.close()  # joins the NER workers: their CPU time is then the children's
        ingest_cpu += _cpu_children()

    out = {
        "corpus": str(args.corpus),
        "documents": report.to_dict()["documents"],
        "chunks": report.chunks_written,
        "model_load_s": round(load_models, 2),
        "wall_s": round(report.wall_seconds, 2),
        "stages_s": {k: round(v, 2) for k, v in report.seconds.items()},
        "embed_only_s": round(embed_only, 2),
        "ratio_total_over_embed_only": round(report.wall_seconds / embed_only, 3),
        "cpu_s": {"ingest": round(ingest_cpu, 2), "embed_only": round(embed_only_cpu, 2)},
        "cores": os.cpu_count(),
        "ratio_floor_on_these_cores": round(ingest_cpu / (os.cpu_count() or 1) / embed_only, 3),
        "chunks_per_s": round(report.chunks_per_second, 1),
        "totals": report.totals,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(json.dumps(out, indent=2, ensure_ascii=False))


def _cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
