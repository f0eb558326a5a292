"""An evaluation's results and their renderings: Markdown ablation table, JSON, PNG chart.

JSON holds fractions (0..1) and every per-query detail (ranked passages, each gold passage's
rank and per-path ranks, the gold ids missed at each k, timings, answers): what error analysis
reads. Markdown and the chart show percentages, one row / one bar group per mode.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kgrag.eval.kb import IngestInfo
from kgrag.eval.negatives import NegativeSummary, OffTopicSummary

# Stages in pipeline order; the three paths run in parallel, so they do not add up to total.
STAGES = ("link", "dense", "bm25", "graph", "rewrite", "fusion", "iterate", "fetch", "rerank", "parents", "total")


@dataclass
class ModeSummary:
    mode: str
    paths: list[str]
    rerank: bool
    queries: int
    recall: dict[str, float]  # k -> mean passage recall@k
    all_gold_at_5: float
    ndcg_at_10: float
    mrr: float
    latency_ms: dict[str, dict[str, float]]  # stage -> {"p50", "p95"}
    short_lists: int  # queries that ranked fewer passages than the depth scored
    below_threshold: int  # queries the pipeline would abstain on
    foreign_hits: int  # ranked passages that are not corpus ids (should be 0)
    rounds: float = 1.0  # mean retrieve–reason rounds per question (1: no iteration)
    max_rounds: int = 1
    llm_calls: float = 0.0  # mean LLM calls per question for retrieval (rewriting, iteration)
    rewrite_fallbacks: int = 0  # LLM rewrites that added nothing (failed or refused), all questions


@dataclass
class AnswerSummary:
    mode: str  # whose hits generation read
    model: str | None  # None: the extractive answerer
    queries: int
    contains: float  # answer holds a gold answer (normalised, whole words); abstentions count 0
    exact: float
    abstained: float
    citations: int
    citation_precision: float  # cited chunk retrieved and supporting a sentence citing it
    citation_gold: float  # cited passage is a gold passage
    answer_modes: dict[str, int]
    fallbacks: int
    latency_ms: dict[str, float]
    leads: float = 0.0  # the answer's first sentence holds a gold answer (reports before it: 0)


@dataclass
class EvalReport:
    dataset: str
    corpus: str
    queries_file: str
    queries: int
    ks: list[int]
    depth: int  # passages ranked per query
    chunk_top_k: int  # chunks asked of the retriever per query
    modes: list[ModeSummary]
    answers: AnswerSummary | None
    ingest: IngestInfo
    retrieval_settings: dict[str, Any]
    per_query: list[dict[str, Any]] = field(repr=False)
    titles: dict[str, str] = field(repr=False)
    wall_seconds: float = 0.0
    query_seconds: float = 0.0
    negatives: NegativeSummary | None = None
    off_topic: OffTopicSummary | None = None
    # Which code measured it, when, and the settings behind the figures (kgrag.eval.provenance);
    # None in reports written before it was recorded.
    provenance: dict[str, Any] | None = None

    def mode(self, name: str) -> ModeSummary:
        for summary in self.modes:
            if summary.mode == name:
                return summary
        raise KeyError(f"no mode {name!r} in this report; modes: {[s.mode for s in self.modes]}")

    def to_dict(self) -> dict[str, Any]:
        return _finite(asdict(self))

    def write_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=1), encoding="utf-8")

    def markdown(self) -> str:
        return render_markdown(self)

    def write_chart(self, path: str | Path) -> None:
        write_chart(self, path)


def _finite(value: Any) -> Any:
    """NaN (a mean over nothing) becomes null: JSON has no NaN."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _pct(x: float | None) -> str:
    return "–" if x is None or math.isnan(x) else f"{100 * x:.1f}"


def _ms(x: float | None) -> str:
    return "–" if x is None or math.isnan(x) else (f"{x:.0f}" if x >= 100 else f"{x:.1f}")


def _table(header: list[str], rows: list[list[str]], align_left: int = 1) -> list[str]:
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i < align_left else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def render_markdown(r: EvalReport) -> str:
    ing = r.ingest
    if ing.reused:
        built = f"built in {ing.built_seconds:.1f} s" if ing.built_seconds else "build time unknown"
        how = f"reused ({built})"
    else:
        how = f"ingested in {ing.seconds:.1f} s"
    t = ing.totals
    out = [
        f"### {r.dataset}: {r.queries} queries, top {r.depth} passages ({r.chunk_top_k} chunks) per query",
        "",
        f"Knowledge base `{ing.kb_dir}`: {how}; {ing.documents} documents, {t.get('chunks', '?')} chunks, "
        f"{t.get('entities', '?')} entities, {t.get('relations', '?')} relations. "
        f"Evaluation {r.query_seconds:.1f} s for {r.queries * len(r.modes)} retrievals (wall {r.wall_seconds:.1f} s).",
        "",
    ]
    if r.provenance:
        p = r.provenance
        out[-1:] = [f"Measured by kgrag {p.get('kgrag')} at commit `{p.get('commit')}` on {p.get('date')}, "
                    f"{p.get('cpus')} CPUs.", ""]
    if r.off_topic is not None:  # the questions' gold is elsewhere: only declining is scored
        return "\n".join([*out, *off_topic_lines(r.off_topic)]) + "\n"
    out += modes_table(r.modes, r.ks)
    stages = [st for st in STAGES if any(st in s.latency_ms for s in r.modes)]
    out += ["", "Latency per stage, ms, p50 / p95 (paths run in parallel: they do not add up to total):", ""]
    out += _table(["mode"] + stages, [
        [s.mode] + [f"{_ms(s.latency_ms[st]['p50'])} / {_ms(s.latency_ms[st]['p95'])}" if st in s.latency_ms else "–"
                    for st in stages]
        for s in r.modes
    ])
    out += _breakdown_table(r)
    if r.answers is not None:
        out += answers_table(r.answers)
    if r.negatives is not None:
        out += negatives_table(r.negatives)
    notes = [f"`{s.mode}`: {s.short_lists} queries ranked fewer than {r.depth} distinct passages"
             for s in r.modes if s.short_lists]
    notes += [f"`{s.mode}`: {s.rounds:.2f} rounds per question (at most {s.max_rounds}), "
              f"{s.llm_calls:.2f} LLM calls per question"
              + (f", {s.rewrite_fallbacks} rewrites fell back" if s.rewrite_fallbacks else "")
              for s in r.modes if s.max_rounds > 1 or s.llm_calls]
    notes += [f"`{s.mode}`: {s.foreign_hits} ranked passages are not in the corpus" for s in r.modes if s.foreign_hits]
    notes += [f"warning: {w}" for w in ing.warnings]
    if notes:
        out += [""] + [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


def modes_table(modes: list[ModeSummary], ks: list[int], label: Callable[[ModeSummary], str] | None = None) -> list[str]:
    """One row per mode: recall at each k, AllGold@5, NDCG@10, MRR, total latency. ``label``:
    the mode column's text for a summary (default: the mode's name)."""
    header = ["mode"] + [f"R@{k}" for k in ks] + ["AllGold@5", "NDCG@10", "MRR", "p50 ms", "p95 ms"]
    rows = []
    for s in modes:
        total = s.latency_ms.get("total", {})
        rows.append([label(s) if label else s.mode] + [_pct(s.recall.get(str(k))) for k in ks]
                    + [_pct(s.all_gold_at_5), _pct(s.ndcg_at_10), _pct(s.mrr), _ms(total.get("p50")), _ms(total.get("p95"))])
    return _table(header, rows)


def answers_table(a: AnswerSummary) -> list[str]:
    """The answers' scores, introduced by who answered from which mode's hits."""
    who = f"LLM `{a.model}`" if a.model else "extractive answerer"
    return ["", f"Answers ({who}, hits of `{a.mode}`; {a.citations} citations; "
                f"answer modes {a.answer_modes}, {a.fallbacks} LLM fallbacks):", "",
            *_table(["contains gold", "first sentence holds gold", "exact", "abstained", "citation precision",
                     "cited gold passage", "p50 ms", "p95 ms"],
                    [[_pct(a.contains), _pct(a.leads), _pct(a.exact), _pct(a.abstained), _pct(a.citation_precision),
                      _pct(a.citation_gold), _ms(a.latency_ms.get("p50")), _ms(a.latency_ms.get("p95"))]], align_left=0)]


def off_topic_lines(o: OffTopicSummary) -> list[str]:
    """Off-topic questions: what share the gate and the answer declined (want 100)."""
    rows = [["gate", _pct(o.gate_abstained)]]
    if o.answer_abstained is not None:
        rows.append(["answer", _pct(o.answer_abstained)])
    reasons = "; ".join(f"{k}: {v}" for k, v in sorted(o.reasons.items(), key=lambda kv: -kv[1]))
    return [f"Off-topic questions: `{o.questions_file}` ({o.queries}) asked of a knowledge base that answers none "
            f"of them; hits of `{o.mode}`.", "",
            *_table(["abstained (want high)", "%"], rows),
            "", f"Gate reasons: {reasons or 'none'}."]


def negatives_table(n: NegativeSummary) -> list[str]:
    """Abstention with the gold passages present (should be low) and taken out (should be high)."""
    rows = [["gate", _pct(n.gate_present), _pct(n.gate_removed)]]
    if n.answer_present is not None:
        rows.append(["answer", _pct(n.answer_present), _pct(n.answer_removed)])
    reasons = "; ".join(f"{k}: {v}" for k, v in sorted(n.reasons_removed.items(), key=lambda kv: -kv[1]))
    return ["", f"Negative rejection (hits of `{n.mode}`, {n.queries} questions; abstention %, gold passages "
                f"present vs taken out of the hits):", "",
            *_table(["abstained", "gold present (want low)", "gold removed (want high)"], rows),
            "", f"Gate reasons with the gold removed: {reasons or 'none'}."]


def breakdown(per_query: list[dict[str, Any]], modes: list[str], ks: list[int]) -> dict[str, Any] | None:
    """Recall per kind of question, when the set names kinds: per ``meta.category`` (the
    handbook's single-text / negation / follow-up ...: a change aimed at one kind shows where it
    helps and whether it costs the others), else per ``meta.type`` when there are two types or
    more (2Wiki's compositional / comparison / bridge-comparison / inference, HotpotQA's bridge /
    comparison). ``{"by", "k", "counts": {kind: questions}, "recall": {mode: {kind: mean}}}``;
    None when the set names no kinds. A run's summary keeps it (``kgrag eval report``): the
    summary drops the per-query records it is computed from."""
    key = "category" if any(q.get("category") for q in per_query) else "type"
    kinds = (sorted({str(q["category"]) for q in per_query if q.get("category")}) if key == "category"
             else list(dict.fromkeys(str(q["type"]) for q in per_query if q.get("type"))))
    if not kinds or (key == "type" and (len(kinds) < 2 or 5 not in ks)):
        return None
    k = "5" if 5 in ks else str(ks[-1])
    groups = {kind: [q for q in per_query if q.get(key) is not None and str(q[key]) == kind] for kind in kinds}
    return {
        "by": key,
        "k": int(k),
        "counts": {kind: len(qs) for kind, qs in groups.items()},
        "recall": {mode: {kind: sum(q["modes"][mode]["recall"][k] for q in qs) / len(qs) for kind, qs in groups.items()}
                   for mode in modes},
    }


def breakdown_table(b: dict[str, Any], modes: list[ModeSummary]) -> list[str]:
    """``breakdown``'s table: per category, R@k by mode; per type, R@5 of all questions, of each
    type, and AllGold@5."""
    kinds = list(b["counts"])
    header = [f"{kind} ({b['counts'][kind]})" for kind in kinds]
    if b["by"] == "category":
        rows = [[s.mode] + [_pct(b["recall"][s.mode][kind]) for kind in kinds] for s in modes]
        return ["", f"R@{b['k']} per question category (`meta.category`):", "", *_table(["mode", *header], rows)]
    rows = [[s.mode, _pct(s.recall["5"])] + [_pct(b["recall"][s.mode][kind]) for kind in kinds] + [_pct(s.all_gold_at_5)]
            for s in modes]
    return ["", "R@5 by question type (`meta.type`):", "", *_table(["mode", "R@5 all", *header, "AllGold@5"], rows)]


def _breakdown_table(r: EvalReport) -> list[str]:
    b = breakdown(r.per_query, [s.mode for s in r.modes], r.ks)
    return breakdown_table(b, r.modes) if b else []


def write_chart(r: EvalReport, path: str | Path) -> None:
    """Grouped bars: one group per mode, one bar per recall@k, values printed on the bars."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on servers and in CI
    import matplotlib.pyplot as plt

    # R@1 is the headline of single-gold sets (CMRC); on multi-hop sets it is capped at 1/|gold|.
    ks = r.ks if _single_gold(r) else ([k for k in r.ks if k > 1] or r.ks)
    width = 0.8 / len(ks)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(r.modes) + 2), 4.5), dpi=120)
    for i, k in enumerate(ks):
        xs = [j + (i - (len(ks) - 1) / 2) * width for j in range(len(r.modes))]
        values = [100 * s.recall[str(k)] for s in r.modes]
        bars = ax.bar(xs, values, width, label=f"R@{k}")
        ax.bar_label(bars, labels=[f"{v:.1f}" for v in values], fontsize=7, padding=1)
    ax.set_xticks(range(len(r.modes)), [s.mode for s in r.modes], rotation=15, ha="right")
    ax.set_ylim(0, 118)  # headroom above 100 for the legend row
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("passage recall (%)")
    ax.set_title(f"{r.dataset}: retrieval ablation ({r.queries} queries)")
    ax.legend(loc="upper center", ncol=len(ks), fontsize=8, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _single_gold(r: EvalReport) -> bool:
    return all(len(q["gold_ids"]) == 1 for q in r.per_query)
