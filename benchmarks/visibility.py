"""How soon a running server answers with a document another process just ingested.

    .venv/bin/python benchmarks/visibility.py --data-dir /tmp/kg-demo [--runs 3]

Starts ``kgrag serve`` over ``--data-dir`` (embedded stores), then per run writes a new text
file holding a unique word and ingests it with ``kgrag ingest`` in another process. Meanwhile
this script watches the two SQLite files for the document's commits (the graph record, then
the chunks: polled every 2 ms) and asks the server every 10 ms for the word through BM25 and
for the text through dense search. It prints, per run, the delay from the chunk commit to the
first answer that has the document (each path), and the median and worst over the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live import KGRAG, OFFLINE, REPO, Server, post_json  # noqa: E402


def _first_time(probe, stop: threading.Event, period: float) -> float | None:
    while not stop.is_set():
        if probe():
            return time.perf_counter()
        time.sleep(period)
    return None


def _has_row(path: Path, sql: str, param: str) -> bool:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute(sql, (param,)).fetchone() is not None
    except sqlite3.Error:
        return False


def _served(url: str, question: str, mode: str, doc_id: str) -> bool:
    status, body = post_json(f"{url}/v1/retrieve", {"question": question, "modes": [mode], "top_k": 5}, 10)
    return status == 200 and any(h.get("source", "").endswith(doc_id) for h in body.get("hits", []))


def one_run(server: Server, data_dir: Path, folder: Path) -> dict:
    word = "vis" + uuid.uuid4().hex[:12]
    path = folder / f"{word}.txt"
    text = f"The {word} protocol was adopted by the lighthouse keepers of Vormsi in 1921."
    path.write_text(text, encoding="utf-8")
    doc_id = path.name  # hits are matched on their source's file name
    found: dict[str, float | None] = {}
    stop = threading.Event()
    probes = {
        "graph_commit": (lambda: _has_row(data_dir / "graph.sqlite", "SELECT 1 FROM documents WHERE source LIKE '%' || ?",
                                          path.name), 0.002),
        "chunk_commit": (lambda: _has_row(data_dir / "chunks.sqlite", "SELECT 1 FROM chunks WHERE source LIKE '%' || ?",
                                          path.name), 0.002),
        "bm25": (lambda: _served(server.url, word, "bm25", doc_id), 0.01),
        "dense": (lambda: _served(server.url, text, "dense", doc_id), 0.01),
    }
    threads = [threading.Thread(target=lambda n=n, p=p: found.__setitem__(n, _first_time(p[0], stop, p[1])))
               for n, p in probes.items()]
    for th in threads:
        th.start()
    ingest = subprocess.run([*KGRAG, "--data-dir", str(data_dir), "ingest", str(path), "--json", "--no-progress"],
                            cwd=REPO, env={**os.environ, **OFFLINE}, capture_output=True, text=True,
                            timeout=600)
    exited = time.perf_counter()
    deadline = exited + 10
    while time.perf_counter() < deadline and not all(found.get(n) for n in probes):
        time.sleep(0.01)
    stop.set()
    for th in threads:
        th.join()
    if ingest.returncode != 0:
        raise RuntimeError(f"ingest failed: {ingest.stderr[-500:]}")
    commit = found.get("chunk_commit")

    def lag(name: str) -> float | None:
        t = found.get(name)
        return None if t is None or commit is None else round((t - commit) * 1000, 1)

    return {"doc": path.name, "bm25_ms_after_commit": lag("bm25"), "dense_ms_after_commit": lag("dense"),
            "chunks_ms_after_graph_commit": None if commit is None or found.get("graph_commit") is None
            else round((commit - found["graph_commit"]) * 1000, 1),
            "ingest_exit_ms_after_commit": None if commit is None else round((exited - commit) * 1000, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="kgrag-visibility-") as folder, Server(args.data_dir) as server:
        for _ in range(args.runs):
            runs.append(one_run(server, args.data_dir, Path(folder)))
            print(json.dumps(runs[-1]), flush=True)
    summary = {}
    for key in ("bm25_ms_after_commit", "dense_ms_after_commit"):
        values = [r[key] for r in runs if r[key] is not None]
        summary[key] = {"median": statistics.median(values) if values else None,
                        "worst": max(values) if values else None, "missed": len(runs) - len(values)}
    print(json.dumps({"summary": summary}))


if __name__ == "__main__":
    main()
