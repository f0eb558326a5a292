"""``benchmarks/scale.py`` at tiny sizes, so the script that draws the README's cost curve keeps
working: real ingest and serve processes, real questions over loopback HTTP."""

from __future__ import annotations

import json
import subprocess
import sys

from kgrag.text.scripts import is_mainly_han
from tests.conftest import REPO, bench_path


def test_scale_benchmark_runs_end_to_end_at_tiny_sizes(tmp_path):
    bench = bench_path()
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "benchmarks/scale.py", "--sizes", "40,80", "--queries", "4", "--clients", "2",
         "--bench-dir", str(bench), "--out", str(out), "--work", str(tmp_path / "work")],
        cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads((out / "scale.json").read_text())
    assert [r["passages"] for r in rows] == [40, 80]
    small, large = rows
    assert 0 < small["chunks"] < large["chunks"] and 0 < small["relations"] < large["relations"]
    for row in rows:
        assert row["ingest_s"] > 0 and row["server_start_s"] > 0 and row["serving_rss_mib"] > 100
        assert row["server_restart_s"] > 0
        assert 0 < row["single"]["total_p50_ms"] <= row["single"]["total_p95_ms"]
        assert {"dense_p95_ms", "bm25_p95_ms", "graph_p95_ms"} <= row["single"].keys()
        assert row["concurrent"]["clients"] == 2 and row["concurrent"]["queries_per_s"] > 0
    assert "| 80 |" in (out / "scale.md").read_text()
    assert (out / "scale.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "work" / "kb-40").exists()  # knowledge bases are removed unless --keep


def test_scale_benchmark_grows_one_english_knowledge_base(tmp_path):
    """``--grow``: the second size ingests only its new passages into the first size's knowledge
    base; ``--language en`` keeps Chinese out; the one-document probe is found by the server's
    next question and deleted again, so the next size starts from exactly its corpus."""
    bench = bench_path()
    out, work = tmp_path / "out", tmp_path / "work"
    proc = subprocess.run(
        [sys.executable, "benchmarks/scale.py", "--sizes", "30,60", "--queries", "3", "--clients", "2",
         "--bench-dir", str(bench), "--out", str(out), "--work", str(work), "--grow", "--language", "en", "--keep"],
        cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, second = json.loads((out / "scale.json").read_text())
    assert (first["new_passages"], second["new_passages"]) == (30, 30)
    assert 0 < first["chunks"] < second["chunks"]
    for row in (first, second):
        probe = row["one_document"]
        assert probe["found"] and probe["ingest_s"] > 0 and probe["delete_s"] > 0
    corpus = [json.loads(line) for line in (work / "corpus-60.jsonl").read_text(encoding="utf-8").splitlines()]
    assert not any(is_mainly_han(rec["text"]) for rec in corpus)
    stats = subprocess.run([sys.executable, "-m", "kgrag.cli", "--data-dir", str(work / "kb-grow"), "stats", "--json"],
                           cwd=REPO, capture_output=True, text=True, timeout=300)
    assert json.loads(stats.stdout)["documents"] == 60  # both probes were deleted
    assert (work / "kb-30").is_dir()  # --keep with --grow: each size's copy
    assert "One new document" in (out / "scale.md").read_text()
    # benchmarks/dense_recall.py on the grown knowledge base: a tiny matrix's projection keeps
    # every direction, so the projected search must find exactly what exact search finds.
    recall = subprocess.run([sys.executable, "benchmarks/dense_recall.py", "--data-dir", str(work / "kb-grow"),
                             "--queries", "3", "--questions", str(bench / "hotpotqa_dev500" / "queries.jsonl")],
                            cwd=REPO, capture_output=True, text=True, timeout=300)
    assert recall.returncode == 0, recall.stderr[-3000:]
    assert "3 questions" in recall.stdout and "recall@10: 100.00 %" in recall.stdout, recall.stdout


def test_ingest_benchmark_reports_its_ratio_and_the_floor_of_these_cores():
    """``benchmarks/ingest.py`` (the README's ingest ratio) on 60 HotpotQA passages: the stages,
    the embedding-only time, and the CPU-bound floor of the ratio on this machine's cores, which
    counts the NER worker processes' CPU too (so it is at least the in-process stages' share)."""
    proc = subprocess.run(
        [sys.executable, "benchmarks/ingest.py", str(bench_path("hotpotqa_dev500", "corpus.jsonl")), "--limit", "60"],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["documents"]["new"] == 60 and out["chunks"] >= 60
    assert {"embed", "extract", "write"} <= out["stages_s"].keys()
    assert out["embed_only_s"] > 0 and out["cpu_s"]["embed_only"] > 0
    assert out["cpu_s"]["ingest"] > out["cpu_s"]["embed_only"]  # the ingest embeds the same texts and more
    # The floor comes from the unrounded seconds; the printed ones are rounded to 0.01 s, which on
    # a sub-second embedding pass moves the quotient by more than a fixed tolerance (CI: 2.545
    # against 2.557 recomputed), so the check is the interval the rounding leaves open.
    ingest, embed, cores = out["cpu_s"]["ingest"], out["embed_only_s"], out["cores"]
    low = (ingest - 0.005) / cores / (embed + 0.005) - 0.0005
    high = (ingest + 0.005) / cores / (embed - 0.005) + 0.0005
    assert low <= out["ratio_floor_on_these_cores"] <= high, (low, out["ratio_floor_on_these_cores"], high)
