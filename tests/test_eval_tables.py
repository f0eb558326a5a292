"""``kgrag eval report``: the published tables name each figure's set, mode, commit and date, put
the served mode first, and read a run's summary exactly as its full report; ``kgrag eval --json``
records the commit and date it needs (``kgrag.eval.provenance``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgrag.cli import main
from kgrag.eval.kb import IngestInfo
from kgrag.eval.negatives import NegativeSummary
from kgrag.eval.provenance import PACKAGE_DIR, code_version
from kgrag.eval.report import AnswerSummary, EvalReport, ModeSummary
from kgrag.eval.tables import (
    BEGIN,
    END,
    RunFileError,
    load_run,
    render,
    replace_section,
    section,
    served_mode,
    summarize,
)

PROVENANCE = {"kgrag": "0.1.0", "commit": "abc1234", "date": "2025-11-11T10:00:00+00:00", "cpus": 2,
              "settings": {"llm": {"model": None}}}


def _mode(name: str, r5: float, mrr: float = 0.5) -> ModeSummary:
    return ModeSummary(mode=name, paths=name.split("+")[:3], rerank=False, queries=4,
                       recall={"1": r5 / 2, "2": r5 / 2, "5": r5, "10": r5}, all_gold_at_5=r5 / 2, ndcg_at_10=0.6,
                       mrr=mrr, latency_ms={"total": {"p50": 20.0, "p95": 40.0}}, short_lists=0,
                       below_threshold=0, foreign_hits=0)


def _report(dataset: str = "handbook_dev102", *, provenance: dict | None = PROVENANCE, iterate: bool = True,
            modes: tuple[tuple[str, float], ...] = (("bm25", 0.5), ("bm25+dense+graph", 0.75),
                                                    ("bm25+dense+graph+iter", 1.0))) -> dict:
    names = [m for m, _ in modes]
    per_query = [{"id": f"q{i}", "category": "follow-up" if i < 1 else "single-text", "type": None,
                  "modes": {m: {"recall": {"1": 0.0, "2": 0.0, "5": float(i % 2), "10": 1.0}} for m in names}}
                 for i in range(4)]
    report = EvalReport(
        dataset=dataset, corpus=f"/somewhere/bench/{dataset}/corpus.jsonl",
        queries_file=f"/somewhere/bench/{dataset}/queries.jsonl", queries=4, ks=[1, 2, 5, 10], depth=10,
        chunk_top_k=30, modes=[_mode(m, r) for m, r in modes],
        answers=AnswerSummary(mode=names[-1], model=None, queries=4, contains=0.75, exact=0.25, abstained=0.25,
                              citations=6, citation_precision=1.0, citation_gold=0.5, answer_modes={"extractive": 3},
                              fallbacks=0, latency_ms={"p50": 3.0, "p95": 5.0}, leads=0.5),
        ingest=IngestInfo(kb_dir="/tmp/kb", reused=True, seconds=None, built_seconds=12.0, documents=1418,
                          totals={"chunks": 2000, "entities": 6000, "relations": 60000}),
        retrieval_settings={"iterate": iterate, "iterate_driver": "entities", "reranker_path": None},
        per_query=per_query, titles={},
        negatives=NegativeSummary(mode=names[-1], queries=4, gate_present=0.25, gate_removed=0.5,
                                  answer_present=0.25, answer_removed=0.5, reasons_removed={"x": 2},
                                  reasons_present={}),
        provenance=provenance,
    )
    return json.loads(json.dumps(report.to_dict()))


def _write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_served_mode_comes_first_and_every_table_names_its_run():
    text = render([summarize(_report())])
    overview = [line for line in text.splitlines() if line.startswith("| handbook_dev102 |")]
    # The served mode's figures (iteration on: +iter), its answers, the gate with and without the gold.
    assert overview == ["| handbook_dev102 | 4 | `bm25+dense+graph+iter` | 100.0 | 50.0 | 50.0 | 75.0 | 50.0 | 100.0 "
                        "| 25.0 / 50.0 | `abc1234` | 2025-11-11 |"]
    rows = [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| `")]
    assert rows[:3] == ["| `bm25+dense+graph+iter` (served)", "| `bm25`", "| `bm25+dense+graph`"]
    assert "Measured at commit `abc1234`, 2025-11-11, kgrag 0.1.0, 2 CPUs." in text
    assert "hits of `bm25+dense+graph+iter`" in text  # the answers' table names its mode
    assert "| mode | follow-up (1) | single-text (3) |" in text  # kept from the per-query records


def test_a_run_without_the_served_mode_says_so():
    data = _report(modes=(("bm25", 0.5), ("bm25+dense+graph", 0.75)))
    text = render([summarize(data)])
    assert "| `bm25` | 25.0 |" in text and "(served)" not in text
    assert "The server's mode, `bm25+dense+graph+iter`, was not measured in this run." in text
    assert "| handbook_dev102 | 4 | `bm25` ¹ | 50.0 |" in text  # first measured mode, flagged
    assert text.count("¹ The server's mode") == 1
    # With iteration switched off, one round is what the server answers with.
    assert served_mode(_report(iterate=False)) == "bm25+dense+graph"


def test_served_mode_follows_the_settings():
    run = _report()
    run["retrieval_settings"].update(reranker_path="/models/r", hyde=True, decompose=True, iterate_driver="llm")
    assert served_mode(run) == "bm25+dense+graph+rerank+iter"  # no LLM: no rewrites, the LLM-free driver
    run["provenance"]["settings"]["llm"]["model"] = "openai/x"
    assert served_mode(run) == "bm25+dense+graph+rerank+hyde+decompose+iter-llm"


def test_a_summary_renders_as_its_full_report_and_is_small():
    full = _report()
    summary = summarize(full)
    assert "per_query" not in summary and "titles" not in summary
    assert summary["corpus"] == "handbook_dev102/corpus.jsonl" and "kb_dir" not in summary["ingest"]
    assert summarize(summary) == summary  # idempotent
    assert render([summary]) == render([summarize(json.loads(json.dumps(summary)))])
    assert summary["breakdown"]["counts"] == {"follow-up": 1, "single-text": 3}


def test_runs_without_provenance_show_unknown_unless_told(tmp_path):
    old = _write(tmp_path / "old.json", _report(provenance=None))
    text = render([load_run(old)])
    assert "| `unknown` | unknown |" in text and "Measured at commit `unknown`, unknown." in text
    told = render([load_run(old, commit="5060975", date="2025-12-01")])
    assert "| `5060975` | 2025-12-01 |" in told
    # What a run records is never replaced.
    recorded = load_run(_write(tmp_path / "new.json", _report()), commit="5060975", date="2025-12-01")
    assert recorded["provenance"]["commit"] == "abc1234" and recorded["provenance"]["date"].startswith("2025-11-11")
    with pytest.raises(RunFileError, match="--date 'yesterday'"):
        load_run(old, date="yesterday")


def test_sets_are_ordered_by_name_whatever_the_argument_order():
    a, b = summarize(_report("2wiki_dev468")), summarize(_report("handbook_dev102"))
    assert render([b, a]) == render([a, b])
    assert render([a, b]).index("### 2wiki_dev468") < render([a, b]).index("### handbook_dev102")


def test_bad_run_files_are_refused_with_their_name(tmp_path):
    with pytest.raises(RunFileError, match="notes.json: not a 'kgrag eval --json' report"):
        load_run(_write(tmp_path / "notes.json", {"hello": 1}))
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(RunFileError, match="broken.json: not a readable JSON file"):
        load_run(tmp_path / "broken.json")


def test_replace_section_keeps_the_rest_of_the_page():
    page = f"# Evaluation\n\nintro\n\n{BEGIN}\nold tables\n{END}\n\nafter\n"
    new = replace_section(page, "new tables\n")
    assert new == f"# Evaluation\n\nintro\n\n{BEGIN}\nnew tables\n{END}\n\nafter\n"
    assert section(new) == "new tables\n"
    with pytest.raises(RunFileError, match="needs one line"):
        replace_section("# no markers\n", "x")


def test_cli_updates_a_page_and_writes_summaries(tmp_path):
    full = _write(tmp_path / "handbook_dev102.json", _report())
    page = tmp_path / "evaluation.md"
    page.write_text(f"# E\n\n{BEGIN}\n{END}\n", encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(main, ["eval", "report", str(full), "--update", str(page),
                                  "--summaries", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    summary = tmp_path / "runs" / "handbook_dev102.json"
    assert "per_query" not in json.loads(summary.read_text())
    printed = runner.invoke(main, ["eval", "report", str(summary)])
    assert printed.exit_code == 0 and section(page.read_text()) == printed.output
    bad = runner.invoke(main, ["eval", "report", str(_write(tmp_path / "x.json", {}))])
    assert bad.exit_code == 2 and "x.json: not a 'kgrag eval --json' report" in bad.output
    no_queries = runner.invoke(main, ["eval"])
    assert no_queries.exit_code == 2 and "Missing option '--queries'" in no_queries.output


def test_code_version_is_the_checkout_commit_or_the_package_version(tmp_path):
    package = tmp_path / "kgrag"
    package.mkdir()
    assert code_version(package) == "v" + __import__("kgrag").__version__  # not a git checkout
    git = shutil.which("git")
    if git is None or not (PACKAGE_DIR.parent / ".git").exists():
        pytest.skip("the package is not imported from a git checkout here: the commit path is not testable")
    expected = subprocess.run([git, "describe", "--always", "--dirty", "--abbrev=7"], cwd=PACKAGE_DIR.parent,
                              capture_output=True, text=True, check=True).stdout.strip()
    assert code_version() == expected
