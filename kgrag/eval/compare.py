"""A/B of two retrieval configurations on the same questions: per-metric difference with a
paired bootstrap confidence interval.

Paired: both configurations answer the same questions, so the unit resampled is the question
and the statistic is the mean of per-question differences (B − A). That removes the spread
between easy and hard questions, which an unpaired interval would count as noise. The
percentile interval over ``resamples`` resamples (seeded: a report is reproducible) is what
is reported; a difference whose interval excludes 0 is marked as such. With 50 questions a
recall@5 difference of a few points typically has an interval several points wide: the number
of questions, not the number of resamples, bounds what can be told apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from kgrag.errors import InputError
from kgrag.eval.report import EvalReport

RESAMPLES = 2000
CONFIDENCE = 0.95


class CompareError(InputError):
    """The two runs cannot be compared question by question."""


@dataclass
class Difference:
    metric: str
    a: float  # mean over questions, configuration A
    b: float
    diff: float  # mean of (B − A) per question
    low: float  # confidence interval of diff
    high: float

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "excludes_zero": self.excludes_zero}


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, resamples: int = RESAMPLES,
                     confidence: float = CONFIDENCE, seed: int = 0) -> tuple[float, float, float]:
    """Mean of ``b − a`` and its percentile bootstrap interval, resampling the pairs."""
    if len(a) != len(b) or not a:
        raise CompareError(f"paired samples must be non-empty and equal in length (got {len(a)} and {len(b)})")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(resamples, len(d)))].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(d.mean()), float(low), float(high)


def _recall_at(k: int) -> Callable[[dict[str, Any]], float]:
    return lambda row: row["recall"][str(k)]


def _metrics(ks: Sequence[int]) -> list[tuple[str, Callable[[dict[str, Any]], float]]]:
    out: list[tuple[str, Callable[[dict[str, Any]], float]]] = [(f"R@{k}", _recall_at(k)) for k in ks]
    out += [("AllGold@5", lambda row: row["all_gold"]), ("NDCG@10", lambda row: row["ndcg"]),
            ("MRR", lambda row: row["rr"])]
    return out


def compare(a: EvalReport, b: EvalReport, mode: str, *, resamples: int = RESAMPLES,
            confidence: float = CONFIDENCE, seed: int = 0) -> list[Difference]:
    """Per metric of ``mode``: A's and B's means, B − A, and its interval."""
    ids_a, ids_b = [r["id"] for r in a.per_query], [r["id"] for r in b.per_query]
    if ids_a != ids_b:
        raise CompareError("the two runs did not score the same questions in the same order")
    for report, label in ((a, "A"), (b, "B")):
        if mode not in report.per_query[0]["modes"]:
            raise CompareError(f"mode {mode!r} was not evaluated for {label}")
    rows_a = [r["modes"][mode] for r in a.per_query]
    rows_b = [r["modes"][mode] for r in b.per_query]
    out = []
    for name, value in _metrics(a.ks):
        va, vb = [value(r) for r in rows_a], [value(r) for r in rows_b]
        diff, low, high = paired_bootstrap(va, vb, resamples=resamples, confidence=confidence, seed=seed)
        out.append(Difference(name, float(np.mean(va)), float(np.mean(vb)), diff, low, high))
    return out


def render_markdown(a_label: str, b_label: str, mode: str, queries: int, differences: Sequence[Difference],
                    confidence: float = CONFIDENCE, resamples: int = RESAMPLES) -> str:
    pct = lambda x: f"{100 * x:.1f}"  # noqa: E731
    signed = lambda x: f"{100 * x:+.1f}"  # noqa: E731
    level = f"{100 * confidence:g}%"
    lines = [
        f"A = {a_label}, B = {b_label}; mode {mode}; {queries} questions; "
        f"paired bootstrap, {resamples} resamples, {level} interval (points)",
        "",
        f"| metric | A | B | B − A | {level} CI | |",
        "|---|---:|---:|---:|---|---|",
    ]
    for d in differences:
        mark = "differs" if d.excludes_zero else "≈"
        lines.append(f"| {d.metric} | {pct(d.a)} | {pct(d.b)} | {signed(d.diff)} | "
                     f"[{signed(d.low)}, {signed(d.high)}] | {mark} |")
    return "\n".join(lines)
