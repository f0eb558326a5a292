"""Off-topic questions: each development set's questions asked of another set's knowledge base,
which answers none of them; the gate (and the answer) should decline every one.

Each pair is ``kgrag eval --off-topic`` (served mode, extractive answers):

    kgrag --data-dir DATA eval --corpus ../shared/bench/<kb set>/corpus.jsonl \\
        --queries ../shared/bench/<questions set>/queries.jsonl --modes bm25+dense+graph+iter --answers --off-topic

This script runs the pairs below (a question set against a knowledge base of another kind:
English multi-hop Wikipedia against the company handbook and Chinese sets, Chinese against
English, handbook against Wikipedia) and prints one table:

    python benchmarks/off_topic.py --data-dir /work/evals/data [--limit 200] [--json out.json]

Knowledge bases are reused from the data dir (``kgrag eval``'s cache); a pair whose base is
not built yet is built first, as ``kgrag eval`` would.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

BENCH = Path(__file__).resolve().parents[1].parent / "shared" / "bench"
# (questions of, asked of): every set's questions against a knowledge base of another kind.
PAIRS = (
    ("hotpotqa_dev500", "handbook_dev102"),
    ("2wiki_dev468", "handbook_dev102"),
    ("musique_train100", "handbook_dev102"),
    ("handbook_dev102", "cmrc2018_dev"),
    ("handbook_dev102", "musique_train100"),
    ("cmrc2018_dev", "handbook_dev102"),
    ("rgb_zh_dev200", "handbook_dev102"),
    ("xquad_xling_dev", "handbook_dev102"),
    ("hotpotqa_dev500", "rgb_zh_dev200"),
    ("cmrc2018_dev", "hotpotqa_dev500"),
)


@click.command()
@click.option("--data-dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--bench", type=click.Path(file_okay=False, path_type=Path), default=BENCH, show_default=True)
@click.option("--limit", type=int, default=200, show_default=True, help="Questions per pair (the first N).")
@click.option("--pair", "pairs", multiple=True, help="QUESTIONS_SET:KB_SET (default: all of PAIRS).")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path))
def main(data_dir: Path, bench: Path, limit: int, pairs: tuple[str, ...], json_out: Path | None) -> None:
    """Ask each set's questions of another set's knowledge base; print how many are declined."""
    from kgrag.cli import _offline_env
    from kgrag.components import Components
    from kgrag.config import load_settings
    from kgrag.eval.data import load_corpus
    from kgrag.eval.kb import default_kb_dir
    from kgrag.eval.runner import run_eval

    _offline_env()
    chosen = [tuple(p.split(":", 1)) for p in pairs] or list(PAIRS)
    settings = load_settings(data_dir=data_dir)
    rows = []
    click.echo("| questions of | asked of | n | gate abstains | answer abstains |")
    click.echo("|---|---|---:|---:|---:|")
    for questions, kb in chosen:
        corpus = bench / kb / "corpus.jsonl"
        comps = Components(settings.model_copy(update={"data_dir": default_kb_dir(settings, load_corpus(corpus))}))
        try:
            report = run_eval(comps, corpus, bench / questions / "queries.jsonl", modes="bm25+dense+graph+iter",
                              answers=True, off_topic=True, limit=limit)
        finally:
            comps.close()
        o = report.off_topic
        assert o is not None
        row = {"questions": questions, "kb": kb, "n": o.queries, "gate": 100 * o.gate_abstained,
               "answer": None if o.answer_abstained is None else 100 * o.answer_abstained, "reasons": o.reasons}
        rows.append(row)
        answer = "–" if row["answer"] is None else f"{row['answer']:.1f}"
        click.echo(f"| {questions} | {kb} | {o.queries} | {row['gate']:.1f} | {answer} |")
    n = sum(r["n"] for r in rows)
    if n:
        gate = sum(r["gate"] * r["n"] for r in rows) / n
        answered = sum((r["answer"] or 0.0) * r["n"] for r in rows) / n
        click.echo(f"| all | | {n} | {gate:.1f} | {answered:.1f} |")
    if json_out:
        json_out.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
