"""Negative rejection (the RGB benchmark's idea): does the system abstain when the knowledge base
does not hold the answer, and answer when it does?

The knowledge base "without the question's gold passages" is built per question from the
retrieval it already ran: the hits of the question's gold passages are taken out of its ranked
list (every chunk of those documents), and the abstention gate (``kgrag.retrieve.abstain``) and,
with ``--answers``, the generator read what is left, exactly as they would read a knowledge base
that never held those passages, save one difference: the paths ranked the remaining chunks with
the gold passages present (a graph walk through a gold page could have brought a neighbour up).
It costs no second ingestion and no second retrieval, so it runs on every question of a set.

The right output with the gold removed is an abstention; with the gold present (the ordinary
run), an answer. Both rates are reported per set: the first should be high, the second low.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from kgrag.eval import metrics as m
from kgrag.eval.data import EvalQuery
from kgrag.retrieve.abstain import assess, gate_settings
from kgrag.retrieve.types import RetrievalResult


@dataclass
class NegativeSummary:
    mode: str  # whose hits the gate read
    queries: int
    gate_present: float  # the gate abstained with the gold passages present (should be low)
    gate_removed: float  # ... with them taken out (should be high)
    answer_present: float | None  # the answer abstained (gate or LLM declining); None: no answers
    answer_removed: float | None
    reasons_removed: dict[str, int]  # why the gate abstained with the gold removed
    reasons_present: dict[str, int]


def without_gold(generator, q: EvalQuery, result: RetrievalResult, retriever, served_k: int) -> dict[str, Any]:
    """The gate's (and the answer's) verdict on the question's hits with its gold passages out."""
    gold = set(q.gold_ids)
    hits = [h for h in result.hits if h.chunk.doc_id not in gold]
    gate = assess(result.query.question, hits[:served_k], result.query.linked, gate_settings(retriever.settings),
                  reranked=result.reranker is not None, ties=result.name_ties,
                  meaning=retriever.meaning_of(result.query.question, hits[:served_k]))
    record: dict[str, Any] = {"gate": gate.to_dict(), "hits": len(hits)}
    if generator is not None:
        answer = generator.answer(q.question, hits[:served_k], abstain=gate.abstain,
                                  expansions=result.query.expansions)
        record["answer"] = {"text": answer.text, "abstained": answer.abstained, "mode": answer.mode}
    return record


def summarize(mode_name: str, per_query: list[dict[str, Any]]) -> NegativeSummary:
    rows = [r for r in per_query if "negative" in r]
    present = [r["modes"][mode_name]["gate"] for r in rows]
    removed = [r["negative"]["gate"] for r in rows]
    answered = [r for r in rows if "answer" in r and "answer" in r["negative"]]
    return NegativeSummary(
        mode=mode_name,
        queries=len(rows),
        gate_present=m.mean([float(g["abstain"]) for g in present]),
        gate_removed=m.mean([float(g["abstain"]) for g in removed]),
        answer_present=m.mean([float(r["answer"]["abstained"]) for r in answered]) if answered else None,
        answer_removed=m.mean([float(r["negative"]["answer"]["abstained"]) for r in answered]) if answered else None,
        reasons_removed=dict(Counter(g["reason"] for g in removed if g["reason"])),
        reasons_present=dict(Counter(g["reason"] for g in present if g["reason"])),
    )


@dataclass
class OffTopicSummary:
    """Another set's questions asked of this knowledge base, which answers none of them: every
    one should be declined."""

    mode: str  # whose hits the gate read
    questions_file: str
    queries: int
    gate_abstained: float  # should be high
    answer_abstained: float | None  # None: no answers scored
    reasons: dict[str, int]  # why the gate abstained


def summarize_off_topic(mode_name: str, per_query: list[dict[str, Any]], questions_file: str) -> OffTopicSummary:
    gates = [r["modes"][mode_name]["gate"] for r in per_query]
    answered = [r["answer"] for r in per_query if "answer" in r]
    return OffTopicSummary(
        mode=mode_name,
        questions_file=questions_file,
        queries=len(per_query),
        gate_abstained=m.mean([float(g["abstain"]) for g in gates]),
        answer_abstained=m.mean([float(a["abstained"]) for a in answered]) if answered else None,
        reasons=dict(Counter(g["reason"] for g in gates if g.get("reason"))),
    )
