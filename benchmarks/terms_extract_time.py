"""Extraction-stage time with and without domain terms (kgrag/ingest/terms.py), back to back
in one process on one corpus: ``python benchmarks/terms_extract_time.py CORPUS.jsonl [DOCS]``.

Each round extracts the same documents with a fresh extractor per setting (terms "off", then
"auto"), in groups of 256 chunks as the ingestion job does; prints seconds per round and the
median ratio. Embedding, which dominates ingestion (handbook_dev102: 545 of 594 s on main), is
not run: it does not change with terms.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from kgrag.components import Components
from kgrag.config import Settings
from kgrag.ingest.loaders.records import load_jsonl


def _groups(chunked):
    group, size = [], 0
    for chunks in chunked:
        group.append(chunks)
        size += len(chunks)
        if size >= 256:
            yield group
            group, size = [], 0
    if group:
        yield group


def main() -> None:
    corpus = Path(sys.argv[1])
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else None
    docs = load_jsonl(corpus)[:limit]
    base = Settings(data_dir=Path(tempfile.mkdtemp()))
    comps = Components(base)
    chunker = comps.chunker()
    chunked = [[c for c in chunker.chunk(d) if c.searchable] for d in docs]
    seconds: dict[str, list[float]] = {"off": [], "auto": []}
    for _round in range(2):
        for mode in ("off", "auto"):
            settings = base.model_copy(update={
                "data_dir": Path(tempfile.mkdtemp()),
                "extraction": base.extraction.model_copy(update={"terms": mode})})
            run = Components(settings, recognizer=comps.recognizer)
            extractor = run.build_extractor(run.graph)
            started = time.perf_counter()
            for group in _groups(chunked):
                extractor.extract_many(group)
            seconds[mode].append(time.perf_counter() - started)
            run.close()
            print(f"round {_round + 1} terms={mode}: {seconds[mode][-1]:.1f} s", flush=True)
    ratio = statistics.median(a / o for a, o in zip(seconds["auto"], seconds["off"], strict=True))
    print(f"{corpus.parent.name}: {len(docs)} documents, {sum(map(len, chunked))} chunks; "
          f"extract off {statistics.median(seconds['off']):.1f} s, auto {statistics.median(seconds['auto']):.1f} s, "
          f"ratio {ratio:.2f}")


if __name__ == "__main__":
    main()
