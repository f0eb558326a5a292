"""Fit the gate's answerability model (``kgrag/retrieve/answerable_model.json``) and print its curve.

The gate's rules decide first; the model is asked about the questions they let pass
(``kgrag.retrieve.abstain``). It is fitted on those, per question set:

- answerable: the question's own knowledge base with a gold passage among the first hits the
  gate reads;
- not answerable: the same hits with the gold passages taken out (what ``kgrag eval
  --negatives`` reads), and **off-topic** questions: a set's questions asked of another set's
  knowledge base (``benchmarks/off_topic.py``'s pairs), whose retrievals are real.

Questions are split in two halves by a hash of their id: the model is fitted on half 0 (each set
and kind weighted alike) and the curve is printed for both halves, so a threshold is kept only
where the held-out half agrees.

    # once per pair (served mode; knowledge bases come from the data dir, built if missing)
    python benchmarks/gate_fit.py capture --data-dir /work/evals/data --questions handbook_dev102 \\
        --kb handbook_dev102 --out /tmp/gate/handbook_dev102@handbook_dev102.pkl
    # fit on every capture, print the curve, write the model
    python benchmarks/gate_fit.py fit /tmp/gate/*.pkl [--write]
"""

from __future__ import annotations

import json
import pickle
import sys
import zlib
from collections import Counter
from dataclasses import replace
from pathlib import Path

import click
import numpy as np

BENCH = Path(__file__).resolve().parents[1].parent / "shared" / "bench"
MODE = "bm25+dense+graph+iter"
THRESHOLDS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4)
L2 = 1.0  # sklearn's C = 1: 0.5 |w|^2 + sum of the weighted losses


@click.group()
def main() -> None:
    """Capture served retrievals; fit the answerability model on them."""


@main.command()
@click.option("--data-dir", required=True, type=click.Path(path_type=Path))
@click.option("--questions", required=True, help="Question set (a folder of the bench directory).")
@click.option("--kb", required=True, help="Knowledge base set; another than --questions: off-topic.")
@click.option("--bench", type=click.Path(file_okay=False, path_type=Path), default=BENCH, show_default=True)
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--limit", type=int)
def capture(data_dir: Path, questions: str, kb: str, bench: Path, out: Path, limit: int | None) -> None:
    """Run the served retrieval of every question (``kgrag eval``'s loop) and keep the results."""
    from kgrag.cli import _offline_env
    from kgrag.components import Components
    from kgrag.config import load_settings
    from kgrag.eval import runner
    from kgrag.eval.data import load_corpus
    from kgrag.eval.kb import default_kb_dir

    _offline_env()
    settings = load_settings(data_dir=data_dir)
    corpus = bench / kb / "corpus.jsonl"
    comps = Components(settings.model_copy(update={"data_dir": default_kb_dir(settings, load_corpus(corpus))}))
    kept: list[dict] = []
    original = runner._score

    def keeping(q, result, *args, **kwargs):
        kept.append({"id": q.id, "question": q.question, "gold_ids": list(q.gold_ids), "result": result})
        return original(q, result, *args, **kwargs)

    runner._score = keeping
    try:
        runner.run_eval(comps, corpus, bench / questions / "queries.jsonl", modes=MODE, answers=False,
                        negatives=False, off_topic=questions != kb, limit=limit)
    finally:
        runner._score = original
    out.write_bytes(pickle.dumps({"questions": questions, "kb": kb, "served_k": comps.settings.retrieval.top_k,
                                  "retrieval": comps.settings.retrieval, "queries": kept}))
    click.echo(f"kept {len(kept)} retrievals of {questions} asked of {kb}")
    comps.close()


def rows_of(payload: dict) -> list[dict]:
    """One row per (question, kind) the model would be asked about, with the gate's verdict."""
    from kgrag.config import RetrievalSettings
    from kgrag.retrieve.abstain import assess, gate_settings
    from kgrag.retrieve.tuning import RANKING

    settings = RetrievalSettings(**payload["retrieval"].model_dump())  # a capture's settings, today's fields
    gate = replace(gate_settings(settings), min_answerable=0.0)  # the rules alone decide
    k, off = payload["served_k"], payload["questions"] != payload["kb"]
    rows = []
    for item in payload["queries"]:
        result = item["result"]
        gold = set(item["gold_ids"])
        base = {"set": payload["questions"], "kb": payload["kb"], "id": item["id"],
                "half": zlib.crc32(item["id"].encode()) % 2}
        sides = [("off", result.hits[:k])] if off else [
            ("present", result.hits[:k]), ("removed", [h for h in result.hits if h.chunk.doc_id not in gold][:k])]
        for kind, hits in sides:
            a = assess(result.query.question, hits, result.query.linked, gate, ties=result.name_ties)
            gold_read = any(h.chunk.doc_id in gold for h in hits[:RANKING.gate_depth])
            rows.append({**base, "kind": kind, "gold_read": gold_read, "rule_abstain": a.abstain,
                         "signals": a.signals})
    return rows


def fit_logistic(x: np.ndarray, y: np.ndarray, weight: np.ndarray, l2: float = L2) -> tuple[np.ndarray, float]:
    """Weighted, L2-regularised logistic regression (the intercept not penalised) by Newton steps."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    penalty = np.full(xb.shape[1], 1.0 / l2)
    penalty[-1] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-xb @ w))
        grad = xb.T @ (weight * (p - y)) + penalty * w
        hess = (xb * (weight * p * (1 - p))[:, None]).T @ xb + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w[:-1], float(w[-1])


@main.command()
@click.argument("captures", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--write", is_flag=True, help="Write kgrag/retrieve/answerable_model.json.")
def fit(captures: tuple[Path, ...], write: bool) -> None:
    """Fit on half 0 of the rows the rules let pass; print abstention per set and half."""
    from kgrag.retrieve.answerable import FEATURES, MODEL_FILE, AnswerableModel

    rows = [r for path in captures for r in rows_of(pickle.loads(path.read_bytes()))]
    asked = [r for r in rows if r["signals"] is not None]
    # answerable: a gold passage among the hits read; the gold present but unread teaches nothing
    train = [r for r in asked if r["half"] == 0 and (r["kind"] != "present" or r["gold_read"])]
    groups = Counter((r["set"], r["kb"], r["kind"]) for r in train)
    x = np.array([[r["signals"][f] for f in FEATURES] for r in train])
    y = np.array([float(r["kind"] == "present") for r in train])
    weight = np.array([1.0 / groups[(r["set"], r["kb"], r["kind"])] for r in train])
    means, scales = x.mean(0), x.std(0) + 1e-9
    coef, intercept = fit_logistic((x - means) / scales, y, weight)
    model = AnswerableModel(FEATURES, tuple(means.round(6)), tuple(scales.round(6)), tuple(coef.round(6)),
                            round(intercept, 6))
    for name, c in sorted(zip(FEATURES, coef, strict=True), key=lambda t: -abs(t[1])):
        click.echo(f"  {name:12s} {c:+.3f}")
    for r in asked:
        r["p"] = model.probability(r["signals"])
    click.echo("\nabstained, % (gold present / gold removed, or off-topic): half 0 (fitted) ‖ half 1 (held out)")
    pairs = sorted({(r["set"], r["kb"]) for r in rows}, key=lambda p: (p[0] != p[1], p))
    click.echo("| questions → knowledge base | " + " | ".join(f"p < {t}" for t in THRESHOLDS) + " |")
    click.echo("|---" + "|---:" * len(THRESHOLDS) + "|")
    for q, kb in pairs:
        kinds = ("present", "removed") if q == kb else ("off",)
        cells = []
        for t in THRESHOLDS:
            halves = [" / ".join(_rate([r for r in rows if r["set"] == q and r["kb"] == kb and r["half"] == half
                                        and r["kind"] == kind], t) for kind in kinds) for half in (0, 1)]
            cells.append(" ‖ ".join(halves))
        click.echo(f"| {q if q == kb else f'{q} → {kb}'} | " + " | ".join(cells) + " |")
    if write:
        MODEL_FILE.write_text(json.dumps({
            "features": list(FEATURES), "means": list(model.means), "scales": list(model.scales),
            "weights": list(model.weights), "intercept": model.intercept,
            "fitted_on": sorted(f"{q}@{kb}" for q, kb in pairs), "rows": len(train)}, indent=1) + "\n",
            encoding="utf-8")
        click.echo(f"wrote {MODEL_FILE}")


def _rate(rows: list[dict], threshold: float) -> str:
    if not rows:
        return "-"
    out = sum(r["rule_abstain"] or (r["signals"] is not None and r["p"] < threshold) for r in rows)
    return f"{100 * out / len(rows):.1f}"


if __name__ == "__main__":
    sys.exit(main())
