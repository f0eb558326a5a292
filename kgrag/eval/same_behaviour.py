"""Whether two ``kgrag eval --json`` runs behaved the same, question by question: the same ranked
passage ids in each mode both measured, the same answer (text and abstention), and the same
answer with the gold removed (``--negatives``). What a refactoring that should change nothing is
checked with (``kgrag eval same A.json B.json``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Sameness:
    mode: str
    questions: int = 0  # asked in both runs
    ranked: int = 0  # with the same ranked ids
    answers: int = 0  # with the same answer (of those both answered)
    answered: int = 0
    negatives: int = 0  # with the same answer to the question with its gold removed
    negated: int = 0
    differing: list[str] = field(default_factory=list)  # question ids, in the first run's order

    @property
    def identical(self) -> bool:
        return not self.differing

    def row(self, name: str) -> str:
        answers = f"{self.answers}/{self.answered}" if self.answered else "–"
        negatives = f"{self.negatives}/{self.negated}" if self.negated else "–"
        return f"| {name} | {self.mode} | {self.questions} | {self.ranked}/{self.questions} | {answers} | {negatives} |"


HEADER = ("| set | mode | questions | same ranked ids | same answers | same answers, gold removed |\n"
          "|---|---|---:|---:|---:|---:|")


def _answer(record: dict[str, Any] | None) -> tuple[Any, Any] | None:
    return None if not record else (record.get("text"), record.get("abstained"))


def compare_runs(a: dict[str, Any], b: dict[str, Any]) -> list[Sameness]:
    """One Sameness per mode both runs measured."""
    first = {q["id"]: q for q in a.get("per_query", [])}
    second = {q["id"]: q for q in b.get("per_query", [])}
    ids = [i for i in first if i in second]
    modes = [m for m in (first[ids[0]]["modes"] if ids else {}) if m in second[ids[0]]["modes"]]
    out = []
    for mode in modes:
        same = Sameness(mode, questions=len(ids))
        for qid in ids:
            x, y = first[qid], second[qid]
            ok = x["modes"][mode]["ranked"] == y["modes"][mode]["ranked"]
            same.ranked += ok
            if x.get("answer") is not None and y.get("answer") is not None:
                same.answered += 1
                agree = _answer(x["answer"]) == _answer(y["answer"])
                same.answers += agree
                ok = ok and agree
            xn, yn = (x.get("negative") or {}).get("answer"), (y.get("negative") or {}).get("answer")
            if xn is not None and yn is not None:
                same.negated += 1
                agree = _answer(xn) == _answer(yn)
                same.negatives += agree
                ok = ok and agree
            if not ok:
                same.differing.append(qid)
        out.append(same)
    return out


def load(path: Path) -> dict[str, Any]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if "per_query" not in data:
        raise ValueError(f"{path}: no per-query records (a summary, not a `kgrag eval --json` run)")
    return data
