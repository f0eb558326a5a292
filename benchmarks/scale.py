"""Cost of the embedded default as the corpus grows: ingest, disk, start-up, memory, latency.

    .venv/bin/python benchmarks/scale.py --sizes 5000,20000,50000,100000 --out docs/scale
    .venv/bin/python benchmarks/scale.py --sizes 200,400 --queries 10 --out /tmp/scale  # smoke

For each size N a corpus of N passages is written, ingested into a fresh knowledge base by
``kgrag ingest`` in its own process, served by ``kgrag serve`` on 127.0.0.1, and asked the same
questions over HTTP, first by one client, then by ``--clients`` concurrent ones. Reported per
size: ingest wall time, chunks/s and seconds per stage, the ingest process's peak RSS, disk
size, entities and relations, server start time (spawn → ``/readyz`` 200; after the ingest, and a restart on
unchanged files), the serving
process's RSS after the questions, retrieval p50/p95 per path and in total (the server's own
stage timings) and the client's wall p50/p95 and throughput. Output: ``scale.json``,
``scale.md`` and ``scale.png`` (every figure against size, log-log) in ``--out``.

**The corpora** (quality is not measured on them, cost is): every passage of the sets in
``--bench-dir`` (HotpotQA, 2Wiki, MuSiQue, the HippoRAG sample, the handbook, CMRC, RGB:
~17k passages, English and Chinese) in a fixed order, de-duplicated by text; beyond those,
synthetic passages, each 3–6 sentences drawn (seeded RNG) from random pool passages of one
language, under a fresh title made of two pool title words and a serial number. They have the
length, vocabulary and entity density of real passages, so chunking, embedding, NER and the
graph do the work they would; their facts are nonsense and no question targets them.

``--language en`` keeps only the pool passages the product reads as English (not mainly Han,
``kgrag.text.scripts.is_mainly_han``) and assembles synthetic passages from them: an English
knowledge base embeds with MiniLM only, while one Chinese document makes the knowledge base
bilingual and every chunk also gets the ~8× slower e5 block (README "Language support"), which
on this 2-core machine puts a bilingual 100k ingest at many hours.

``--grow`` builds one knowledge base size by size instead of a fresh one per size: the corpus of
size N is the corpus of the previous size plus new passages (the sequence is prefix-stable), and
``kgrag ingest`` of it skips the unchanged documents by content hash and writes only the new
ones — so the ingest figures of a row are for the increment (``new passages``), the serving
figures for the whole knowledge base. It ingests max(sizes) passages in all instead of their sum.

The questions are the first ``--queries`` questions of the HotpotQA set (their passages are
in every corpus of ≥ 5k). Only loopback traffic; every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH_SETS = ("hotpotqa_dev500", "2wiki_dev468", "musique_train100", "hipporag_sample", "handbook_dev102",
              "cmrc2018_dev", "rgb_zh_dev200")
SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")
CJK = re.compile(r"[\u4e00-\u9fff]")
START_TIMEOUT_S = 600
REQUEST_TIMEOUT_S = 120


# -- corpora -------------------------------------------------------------------------------
def load_pool(bench_dir: Path, language: str = "all") -> list[dict]:
    """Every passage of the bench sets, in a fixed order, de-duplicated by text (``language="en"``:
    only those the product does not read as Chinese)."""
    from kgrag.text.scripts import is_mainly_han

    seen: set[str] = set()
    pool = []
    for name in BENCH_SETS:
        path = bench_dir / name / "corpus.jsonl"
        if not path.exists():
            continue
        with path.open(encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                if language == "en" and is_mainly_han(rec["text"]):
                    continue
                if rec["text"] not in seen:
                    seen.add(rec["text"])
                    pool.append({"id": f"{name}/{rec['id']}", "title": rec.get("title", ""), "text": rec["text"]})
    return pool


def synthetic(pool: list[dict], n: int, seed: int = 13, english: bool = False) -> list[dict]:
    """``n`` passages assembled from pool sentences (see the module docstring). ``english``:
    a passage the product would read as Chinese (sentences drawn from English passages that
    quote Chinese) is drawn again, so the corpus never turns bilingual; the passages before
    the first such draw are the same either way."""
    from kgrag.text.scripts import is_mainly_han

    rng = random.Random(seed)
    by_lang: dict[bool, list[dict]] = {True: [], False: []}
    for rec in pool:
        by_lang[bool(CJK.search(rec["text"][:200]))].append(rec)
    words = [w for rec in pool for w in rec["title"].split() if w[:1].isupper() and w.isalpha()] or ["Topic"]
    out: list[dict] = []
    while len(out) < n:
        k = len(out)
        zh = rng.random() < len(by_lang[True]) / max(1, len(pool))
        source = by_lang[zh] or by_lang[not zh]
        sentences = []
        for _ in range(rng.randint(3, 6)):
            parts = [s for s in SENTENCE.split(rng.choice(source)["text"]) if len(s) > 20]
            if parts:
                sentences.append(rng.choice(parts).strip())
        title = f"{rng.choice(words)} {rng.choice(words)} {k}"
        text = ("" if zh else " ").join(sentences) or title
        if english and is_mainly_han(text[:4000]):
            continue
        out.append({"id": f"synthetic/{k}", "title": title, "text": text})
    return out


def write_corpus(pool: list[dict], size: int, path: Path, english: bool = False) -> None:
    records = pool[:size] + synthetic(pool, max(0, size - len(pool)), english=english)
    with path.open("w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")


# -- processes -----------------------------------------------------------------------------
def kgrag(*args: str) -> list[str]:
    return [sys.executable, "-m", "kgrag.cli", *args]


def run_measured(cmd: list[str]) -> tuple[str, float, float]:
    """Runs ``cmd``; its stdout, wall seconds and peak RSS in MiB (of that process itself)."""
    t = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, cwd=REPO, env=_env())
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t
        out.seek(0)
        text = out.read().decode("utf-8")
    if proc.returncode not in (0, 1):  # 1: some files failed, reported in the JSON
        raise SystemExit(f"{' '.join(cmd[2:])} exited {proc.returncode}")
    return text, wall, usage.ru_maxrss / 1024


def _env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.pop("KGRAG_SERVER_URL", None)
    return env


def rss_mib(pid: int) -> float:
    """Resident memory of a process and its children (gunicorn's worker holds the models)."""
    import psutil

    root = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]) / 2**20


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(data_dir: Path) -> tuple[subprocess.Popen, str, float]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    t = time.perf_counter()
    proc = subprocess.Popen(kgrag("--data-dir", str(data_dir), "serve", "--port", str(port)), cwd=REPO, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while time.perf_counter() - t < START_TIMEOUT_S:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=5) as resp:
                if resp.status == 200:
                    return proc, url, time.perf_counter() - t
        except OSError:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise SystemExit(f"the server was not ready within {START_TIMEOUT_S} s")


def ask(url: str, question: str) -> tuple[float, dict[str, float]]:
    body = json.dumps({"question": question}).encode("utf-8")
    req = urllib.request.Request(url + "/v1/retrieve", data=body, headers={"Content-Type": "application/json"})
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT_S) as resp:
        trace = json.load(resp)["trace"]
    return (time.perf_counter() - t) * 1000, trace.get("timings_ms", {})


# -- one size ------------------------------------------------------------------------------
def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))], 1)


def measure(size: int, pool: list[dict], questions: list[str], clients: int, work: Path, grow: bool = False,
            english: bool = False) -> dict:
    corpus, data_dir = work / f"corpus-{size}.jsonl", work / ("kb-grow" if grow else f"kb-{size}")
    write_corpus(pool, size, corpus, english)
    out, wall, peak = run_measured(kgrag("--data-dir", str(data_dir), "ingest", str(corpus), "--json", "--no-progress"))
    report = json.loads(out)
    row: dict = {"passages": size, "new_passages": report["documents"].get("new", 0),
                 "chunks": report["totals"].get("chunks", 0),
                 "entities": report["totals"].get("entities", 0), "relations": report["totals"].get("relations", 0),
                 "ingest_s": round(wall, 1), "ingest_chunks_per_s": round(report["chunks_written"] / wall, 1),
                 "ingest_stages_s": report["seconds"], "ingest_peak_rss_mib": round(peak),
                 "disk_mib": round(sum(p.stat().st_size for p in data_dir.rglob("*") if p.is_file()) / 2**20, 1)}
    return row | serve(size, pool, questions, clients, work, data_dir)


def serve(size: int, pool: list[dict], questions: list[str], clients: int, work: Path, data_dir: Path) -> dict:
    """The serving half of a row: start-up, latency (one client, then ``clients``), RSS, probe."""
    row: dict = {}
    # The first start after an ingest finds the integrity check noted by it (``kgrag ingest``
    # checks the files it wrote after closing them); a reused knowledge base (--serve-only)
    # finds the note of its last check, valid only while the files are unchanged.
    proc, url, start_s = start_server(data_dir)
    try:
        row["server_start_s"] = round(start_s, 1)
        ask(url, questions[0])  # untimed: the first question pays for lazy caches (fuzzy matcher, graph)
        single = [ask(url, q) for q in questions]
        row["single"] = _latency(single)
        t = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool_:
            concurrent = list(pool_.map(lambda q: ask(url, q), questions))
        row["concurrent"] = _latency(concurrent) | {
            "clients": clients, "queries_per_s": round(len(questions) / (time.perf_counter() - t), 1)}
        row["serving_rss_mib"] = round(rss_mib(proc.pid))
        row["one_document"] = probe(size, pool, url, data_dir, work)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    row["server_restart_s"] = restart(data_dir)
    return row


def restart(data_dir: Path) -> float:
    """Start-up on files no process changed since the last start (a restart, a second
    replica): the first of two starts checks the files the probe changed, the second is timed."""
    for _ in range(2):
        proc, _, start_s = start_server(data_dir)
        proc.terminate()
        proc.wait(timeout=60)
    return round(start_s, 1)


def probe(size: int, pool: list[dict], url: str, data_dir: Path, work: Path) -> dict:
    """One new document while the server runs: ``kgrag ingest`` of it (its own process, models
    loaded included), the server's next question that names it (does the graph catch up pair
    by pair, or rebuild?), then ``kgrag delete`` of it — so the knowledge base is as before."""
    rec = synthetic(pool, 1, seed=size, english=True)[0] | {"id": f"scale-probe/{size}", "title": f"Scale Probe Zyxwv {size}"}
    path = work / f"probe-{size}.jsonl"
    path.write_text(json.dumps(rec, ensure_ascii=False) + "\n", encoding="utf-8")
    out, ingest_wall, _ = run_measured(kgrag("--data-dir", str(data_dir), "ingest", str(path), "--json", "--no-progress"))
    body = json.dumps({"question": f"What is {rec['title']}?"}).encode("utf-8")
    req = urllib.request.Request(url + "/v1/retrieve", data=body, headers={"Content-Type": "application/json"})
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT_S) as resp:
        answer = json.load(resp)
    wall_ms = (time.perf_counter() - t) * 1000
    _, delete_wall, _ = run_measured(kgrag("--data-dir", str(data_dir), "delete", rec["id"]))
    return {
        "ingest_s": round(ingest_wall, 2),
        "ingest_stages_s": json.loads(out)["seconds"],
        "next_question_wall_ms": round(wall_ms, 1),
        "next_question_timings_ms": answer["trace"].get("timings_ms", {}),
        "found": any(h.get("trace", {}).get("doc_id") == rec["id"] or h.get("doc_id") == rec["id"] for h in answer["hits"]),
        "delete_s": round(delete_wall, 2),
    }


def _latency(results: list[tuple[float, dict[str, float]]]) -> dict:
    walls = [w for w, _ in results]
    out = {"wall_p50_ms": pct(walls, 50), "wall_p95_ms": pct(walls, 95)}
    for stage in ("dense", "bm25", "graph", "total"):
        values = [t[stage] for _, t in results if stage in t]
        if values:
            out[f"{stage}_p50_ms"], out[f"{stage}_p95_ms"] = pct(values, 50), pct(values, 95)
    return out


# -- report --------------------------------------------------------------------------------
COLUMNS = [  # (header, how to read it from a row)
    ("passages", lambda r: r["passages"]), ("new passages", lambda r: r.get("new_passages", r["passages"])),
    ("chunks", lambda r: r["chunks"]),
    ("entities", lambda r: r["entities"]), ("relations", lambda r: r["relations"]),
    ("ingest s", lambda r: r["ingest_s"]), ("chunks/s", lambda r: r["ingest_chunks_per_s"]),
    ("ingest peak RSS MiB", lambda r: r["ingest_peak_rss_mib"]), ("disk MiB", lambda r: r["disk_mib"]),
    ("start s", lambda r: r["server_start_s"]), ("restart s", lambda r: r.get("server_restart_s", "")),
    ("serving RSS MiB", lambda r: r["serving_rss_mib"]),
    ("p50 ms", lambda r: r["single"].get("total_p50_ms")), ("p95 ms", lambda r: r["single"].get("total_p95_ms")),
    ("dense p95", lambda r: r["single"].get("dense_p95_ms")), ("bm25 p95", lambda r: r["single"].get("bm25_p95_ms")),
    ("graph p95", lambda r: r["single"].get("graph_p95_ms")),
    ("concurrent p95 ms", lambda r: r["concurrent"].get("wall_p95_ms")),
    ("concurrent q/s", lambda r: r["concurrent"].get("queries_per_s")),
]


def markdown(rows: list[dict], clients: int, questions: int) -> str:
    lines = [f"{questions} questions over HTTP (`/v1/retrieve`, default modes); p50/p95 are the server's total; "
             f"concurrent: {clients} clients, client wall time.", "",
             "| " + " | ".join(h for h, _ in COLUMNS) + " |", "|" + "---:|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(get(r)) for _, get in COLUMNS) + " |" for r in rows]
    stages = sorted({k for r in rows for k in r["ingest_stages_s"]})
    lines += ["", "Ingest seconds per stage:", "", "| passages | " + " | ".join(stages) + " |",
              "|" + "---:|" * (len(stages) + 1)]
    lines += [f"| {r['passages']} | " + " | ".join(str(r["ingest_stages_s"].get(s, "")) for s in stages) + " |"
              for r in rows]
    probes = [r for r in rows if "one_document" in r]
    if probes:
        lines += ["", "One new document while the server runs (`kgrag ingest` process incl. model loading; the "
                  "server's next question naming it; `kgrag delete`):", "",
                  "| passages | ingest s | prepare reads s | next question ms | its graph ms | found | delete s |",
                  "|---:|---:|---:|---:|---:|:---:|---:|"]
        for r in probes:
            p = r["one_document"]
            lines.append(f"| {r['passages']} | {p['ingest_s']} | {p['ingest_stages_s'].get('prepare reads', '')} | "
                         f"{p['next_question_wall_ms']} | {p['next_question_timings_ms'].get('graph', '')} | "
                         f"{'yes' if p['found'] else 'no'} | {p['delete_s']} |")
    return "\n".join(lines) + "\n"


def chart(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [c for c in COLUMNS[1:] if all(isinstance(get(r), (int, float)) and get(r) > 0 for r in rows for get in [c[1]])]
    cols = 4
    fig, axes = plt.subplots((len(shown) + cols - 1) // cols, cols, figsize=(4 * cols, 3 * ((len(shown) + cols - 1) // cols)))
    sizes = [r["passages"] for r in rows]
    for ax, (header, get) in zip(axes.flat, shown, strict=False):
        ax.loglog(sizes, [get(r) for r in rows], marker="o")
        ax.set_title(header, fontsize=10)
        ax.set_xlabel("passages", fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(shown):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="5000,20000,50000,100000", help="comma-separated passage counts")
    ap.add_argument("--queries", type=int, default=200, help="how many HotpotQA questions to ask")
    ap.add_argument("--clients", type=int, default=8, help="concurrent clients for the second round")
    ap.add_argument("--bench-dir", type=Path, default=REPO.parent / "shared" / "bench")
    ap.add_argument("--out", type=Path, required=True, help="folder for scale.json, scale.md, scale.png")
    ap.add_argument("--work", type=Path, help="where corpora and knowledge bases go (default: a temporary folder)")
    ap.add_argument("--keep", action="store_true",
                    help="keep each knowledge base (default: deleted after its size; with --grow, copied per size)")
    ap.add_argument("--language", choices=("all", "en"), default="all",
                    help="en: English passages only (MiniLM only; see the module docstring)")
    ap.add_argument("--serve-only", action="store_true",
                    help="measure serving again on the knowledge bases a --keep run left in --work "
                         "(kb-N, else kb-grow for the largest), keeping the ingest figures of --out/scale.json")
    ap.add_argument("--grow", action="store_true",
                    help="grow one knowledge base size by size (ingest figures are per increment)")
    args = ap.parse_args()

    sizes = sorted(int(s) for s in args.sizes.split(","))
    pool = load_pool(args.bench_dir, args.language)
    if not pool:
        raise SystemExit(f"no corpus.jsonl under {args.bench_dir}")
    with (args.bench_dir / "hotpotqa_dev500" / "queries.jsonl").open(encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for _, line in zip(range(args.queries), f, strict=False)]
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.work or Path(tempfile.mkdtemp(prefix="kgrag-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    if args.serve_only:
        if args.work is None:
            raise SystemExit("--serve-only needs the --work folder of a --keep run")
        earlier = {r["passages"]: r for r in json.loads((args.out / "scale.json").read_text(encoding="utf-8"))}
    for size in sizes:
        print(f"{size} passages ...", file=sys.stderr, flush=True)
        if args.serve_only:
            data_dir = work / f"kb-{size}" if (work / f"kb-{size}").is_dir() else work / "kb-grow"
            rows.append(earlier[size] | serve(size, pool, questions, args.clients, work, data_dir))
        else:
            rows.append(measure(size, pool, questions, args.clients, work, args.grow, args.language == "en"))
        if not args.keep and not args.grow and not args.serve_only:
            shutil.rmtree(work / f"kb-{size}", ignore_errors=True)
        if args.keep and args.grow and not args.serve_only and size != sizes[-1]:  # each size's knowledge base, for later benchmarks
            shutil.copytree(work / "kb-grow", work / f"kb-{size}", dirs_exist_ok=True)
        (args.out / "scale.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")  # after each size
    md = markdown(rows, args.clients, len(questions))
    (args.out / "scale.md").write_text(md, encoding="utf-8")
    chart(rows, args.out / "scale.png")
    print(md)
    print(f"median single-client p95 over sizes: {statistics.median(r['single'].get('total_p95_ms', 0) for r in rows)} ms",
          file=sys.stderr)
    if args.grow and not args.keep and not args.serve_only:
        shutil.rmtree(work / "kb-grow", ignore_errors=True)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
