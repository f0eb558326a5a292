"""Replay the abstention gate and the extractive answerer over captured retrievals.

``kgrag eval --answers --negatives`` re-runs every retrieval; the gate (``kgrag.retrieve.abstain``)
and the extractive answerer are pure functions of the question and its hits, so a variant of
either is measured in seconds over hits captured once:

    # once per set: run the eval (its report is the "before"), keep each question's hits
    python benchmarks/gate_replay.py capture --data-dir /tmp/kgeval-me \\
        --set hotpotqa_dev500 --out /tmp/hotpot.pkl [--json before.json]
    # after a change to the gate or the answerer: the same figures from the kept hits
    python benchmarks/gate_replay.py replay /tmp/hotpot.pkl [...]

Replay prints, per set: abstention with the gold passages present and removed (what
``--negatives`` reports), the extractive answer's contains-gold rate and its abstention, the
gate's reasons. Retrieval is not re-run, so its figures are the capture's by construction.
"""

from __future__ import annotations

import json
import pickle
import sys
from collections import Counter
from pathlib import Path

import click

MODE = "bm25+dense+graph"
BENCH = Path(__file__).resolve().parents[1].parent / "shared" / "bench"


@click.group()
def main() -> None:
    """Capture retrievals once, replay the gate and the answerer over them."""


@main.command()
@click.option("--data-dir", required=True, type=click.Path(path_type=Path))
@click.option("--set", "name", required=True, help="Folder name under the shared bench directory.")
@click.option("--bench", type=click.Path(file_okay=False, path_type=Path), default=BENCH, show_default=True)
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--limit", type=int)
def capture(data_dir: Path, name: str, bench: Path, out: Path, json_out: Path | None, limit: int | None) -> None:
    """Run ``kgrag eval --modes bm25+dense+graph --answers --negatives`` and keep every retrieval."""
    from kgrag.cli import _offline_env
    from kgrag.components import Components
    from kgrag.config import load_settings
    from kgrag.eval import runner
    from kgrag.eval.data import load_corpus
    from kgrag.eval.kb import default_kb_dir

    _offline_env()
    settings = load_settings(data_dir=data_dir)
    corpus, queries = bench / name / "corpus.jsonl", bench / name / "queries.jsonl"
    kb_dir = default_kb_dir(settings, load_corpus(corpus))
    comps = Components(settings.model_copy(update={"data_dir": kb_dir}))
    kept: list[dict] = []
    original = runner.without_gold

    def keeping(generator, q, result, retrieval_settings, served_k):
        kept.append({"id": q.id, "question": q.question, "gold_ids": list(q.gold_ids), "answers": list(q.answers),
                     "result": result})
        return original(generator, q, result, retrieval_settings, served_k)

    runner.without_gold = keeping
    try:
        report = runner.run_eval(comps, corpus, queries, modes=MODE, answers=True, negatives=True, limit=limit)
    finally:
        runner.without_gold = original
    payload = {"set": name, "served_k": comps.settings.retrieval.top_k,
               "retrieval": comps.settings.retrieval, "llm": comps.settings.llm, "queries": kept}
    out.write_bytes(pickle.dumps(payload))
    if json_out:
        report.write_json(json_out)
    click.echo(report.markdown())
    comps.close()


@main.command()
@click.argument("captures", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--per-query", type=click.Path(dir_okay=False, path_type=Path),
              help="Write each question's verdicts (JSON lines) here.")
def replay(captures: tuple[Path, ...], per_query: Path | None) -> None:
    """Gate and extractive answers over captured hits, present and removed."""
    rows = []
    sink = per_query.open("w", encoding="utf-8") if per_query else None
    click.echo("| set | n | gate present | gate removed | answer abstains present | removed | contains gold |")
    click.echo("|---|---:|---:|---:|---:|---:|---:|")
    for path in captures:
        figures, reasons = _replay_one(pickle.loads(path.read_bytes()), sink)
        rows.append(figures)
        click.echo("| {set} | {n} | {gate_present:.1f} | {gate_removed:.1f} | {answer_present:.1f} | "
                   "{answer_removed:.1f} | {contains:.1f} |".format(**figures))
        click.echo(f"  reasons removed: {dict(reasons['removed'])}; present: {dict(reasons['present'])}", err=True)
    if sink:
        sink.close()


def _replay_one(payload: dict, sink) -> tuple[dict, dict[str, Counter]]:
    from kgrag.eval.answers import answer_contains
    from kgrag.generate.generator import Generator
    from kgrag.retrieve.abstain import assess, gate_settings

    gate = gate_settings(payload["retrieval"])
    generator = Generator(payload["llm"])
    served_k = payload["served_k"]
    counts = Counter()
    reasons: dict[str, Counter] = {"present": Counter(), "removed": Counter()}
    for item in payload["queries"]:
        result = item["result"]
        gold = set(item["gold_ids"])
        reranked = result.reranker is not None
        present_hits = result.hits[:served_k]
        removed_hits = [h for h in result.hits if h.chunk.doc_id not in gold][:served_k]
        verdicts = {}
        for side, hits in (("present", present_hits), ("removed", removed_hits)):
            g = assess(result.query.question, hits, result.query.linked, gate, reranked=reranked)  # a follow-up completed
            answer = generator.answer(item["question"], hits, abstain=g.abstain, expansions=result.query.expansions)
            counts[f"gate_{side}"] += g.abstain
            counts[f"answer_{side}"] += answer.abstained
            if g.reason:
                reasons[side][g.reason] += 1
            verdicts[side] = {"abstain": g.abstain, "reason": g.reason, "missing": g.missing_names,
                              "coverage": g.coverage, "answer": answer.text, "answer_abstained": answer.abstained}
            if side == "present":
                counts["contains"] += (not answer.abstained) and answer_contains(answer.text, item["answers"])
        if sink:
            sink.write(json.dumps({"set": payload["set"], "id": item["id"], "question": item["question"],
                                   "answers": item["answers"], **verdicts}, ensure_ascii=False) + "\n")
    n = len(payload["queries"]) or 1
    figures = {"set": payload["set"], "n": len(payload["queries"]),
               **{k: 100 * counts[k] / n for k in ("gate_present", "gate_removed", "answer_present",
                                                     "answer_removed", "contains")}}
    return figures, reasons


if __name__ == "__main__":
    sys.exit(main())
