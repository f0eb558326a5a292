"""LLM query rewriting before the paths run, and the LLM iteration driver — the retrieval side.

The LLM itself sits behind ``QueryLLM`` (``kgrag.retrieve.query_llm`` through litellm: prompt
files, constrained JSON, validation); this module decides what each rewrite searches and
records it. Four switches (``retrieval.hyde`` / ``multi_query`` / ``decompose`` /
``step_back``, the request's ``rewrite``, eval modes ``+hyde`` ...):

- ``hyde``: a hypothetical answer passage, embedded for the dense path (``dense@hyde``): a
  passage resembles the passage sought more than the question does.
- ``multi_query``: N paraphrases, each searched on the question's paths (``bm25@mq1``...).
- ``decompose``: sub-questions of a multi-hop or comparison question, each searched on the
  question's paths (``graph@sq2``...), with its own best hits kept per sub-question in the trace.
- ``step_back``: a more general question, searched alongside (``dense@sb``...).

Every list is fused with the question's own (a rewritten list votes with its path's weight but
never claims a head place: a paraphrase a small model got wrong must not push a hit into the
top 3). A rewrite that fails — no LLM, timeout, bad JSON, refusal, nothing usable — adds
nothing, and the trace says why (``Rewriting.fallback_reason``).

With a 135M model no rewrite gained recall and each cost seconds a question; a capable model
is needed for a gain (docs/decisions.md, "LLM query rewriting stays off").
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from kgrag.retrieve.fusion import Fusion
from kgrag.retrieve.iterate import IterationDriver, RoundPlan
from kgrag.retrieve.types import PathResult, Query, Rewriting, Round

REWRITES = ("hyde", "multi_query", "decompose", "step_back")
# The suffix of a rewrite's lists: "dense@hyde", "bm25@mq1", "graph@sq2", "dense@sb".
_TAGS = {"hyde": "hyde", "multi_query": "mq", "decompose": "sq", "step_back": "sb"}
EVIDENCE_PER_LIST = 3  # per sub-question and list, the best chunk ids the trace keeps


@dataclass
class Judgement:
    """The LLM driver's reading of a round: the evidence is enough, or the next query."""

    enough: bool
    next_query: str


class QueryLLM(Protocol):
    """An LLM that rewrites questions and judges evidence; both raise on any failure."""

    def rewrite(self, kind: str, question: str, n: int = 3) -> list[str]: ...

    def judge(self, question: str, passages: list[str]) -> Judgement: ...


def parse_rewrites(names: Collection[str]) -> tuple[str, ...]:
    """Rewrite names in the standard order; ``ValueError`` naming an unknown one."""
    unknown = sorted(set(names) - set(REWRITES))
    if unknown:
        raise ValueError(f"unknown query rewrite(s) {unknown}; known: {list(REWRITES)}")
    return tuple(k for k in REWRITES if k in names)


# Searches a query's text on the given paths (linking it first): the pipeline's search_paths.
Search = Callable[[Query, tuple[str, ...]], list[PathResult]]


def run_rewrites(llm: QueryLLM | None, kinds: Sequence[str], query: Query, search: Search,
                 n: int = 3) -> tuple[list[PathResult], list[Rewriting]]:
    """The lists the ``kinds`` of rewrite add for ``query`` (to fuse with the question's own),
    and what each did. Never raises for an LLM failure: that rewrite adds nothing."""
    added: list[PathResult] = []
    done: list[Rewriting] = []
    for kind in kinds:
        t = time.perf_counter()
        record = Rewriting(kind)
        done.append(record)
        if llm is None:
            record.fallback_reason = "no LLM is configured (llm.model is unset)"
            continue
        if kind == "hyde" and "dense" not in query.modes:
            record.fallback_reason = "the dense path is not among this question's paths"
            continue
        try:
            record.llm_calls = 1
            texts = llm.rewrite(kind, query.question, n)
        except Exception as exc:  # noqa: BLE001 - any failure: the question goes on unrewritten
            record.fallback_reason = str(exc)[:300] or type(exc).__name__
            record.llm_ms = record.ms = _ms(t)
            continue
        record.llm_ms = _ms(t)
        paths = ("dense",) if kind == "hyde" else query.modes
        for i, text in enumerate(texts, start=1):
            tag = _TAGS[kind] if kind in ("hyde", "step_back") else f"{_TAGS[kind]}{i}"
            lists = _search_text(query, text, paths, search)
            for r in lists:
                r.tag(tag)
                r.keep_head = False
            added += lists
            record.queries.append({"text": text, "paths": [r.name for r in lists],
                                   "evidence": {r.name: [h.id for h in r.hits[:EVIDENCE_PER_LIST]] for r in lists}})
        record.ms = _ms(t)
    return added, done


def _search_text(query: Query, text: str, paths: tuple[str, ...], search: Search) -> list[PathResult]:
    """``text`` searched as its own question on ``paths``: linked afresh, no feedback of the
    question's, the question's exclusions and filters kept."""
    sub = copy.copy(query)
    sub.question = text
    sub.understanding = None  # the rules read the question; a rewrite is searched as written
    sub.completion = None
    sub.linked, sub.expansions, sub.feedback, sub.feedback_from = [], [], [], []
    sub.described = []
    sub.modes = paths
    return search(sub, paths)


class LLMDriver:
    """The ``IterationDriver`` that asks the LLM: after a round it reads the question and the
    best ``hits`` fused hits and answers ``{enough, next_query}``; enough stops the loop, else
    the next round searches the next query on every path, its entities seeding the graph walk.
    When the LLM fails or proposes a query already searched, the ``fallback`` driver (the
    LLM-free one) plans the round, and the round's ``why`` (or the stop reason) says so."""

    name = "llm"

    def __init__(self, llm: QueryLLM | None, fallback: IterationDriver, texts: Callable[[list[str]], list[str]],
                 link: Callable[[str], list[str]], hits: int = 3):
        """``texts``: chunk ids → texts; ``link``: a text → the entity keys it names. ``llm``
        None (none configured): every round is the fallback's, saying so."""
        self.llm = llm
        self.fallback = fallback
        self.texts = texts
        self.link = link
        self.hits = hits

    def plan(self, query: Query, fusion: Fusion, seen_entities: set[str], rounds: Sequence[Round]) -> RoundPlan:
        top = [item.chunk_id for item in fusion.items[: self.hits]]
        if not top:
            return RoundPlan(stop="no hit to read")
        if query.completion is not None and query.completion.positional:
            # As for the LLM-free driver: what it asks for is a neighbour of the last turn's
            # hits (placed after the rounds, kgrag.retrieve.cited_neighbour), not a chain to follow.
            return RoundPlan(stop="a follow-up asking for a neighbour by position ('the next one'): "
                                  "no LLM round is asked for")
        if self.llm is None:
            plan = self._fallback("no LLM is configured (llm.model is unset)", query, fusion, seen_entities, rounds)
            plan.llm_calls = 0
            return plan
        try:
            judged = self.llm.judge(query.question, self.texts(top))
        except Exception as exc:  # noqa: BLE001 - any failure: the LLM-free plan
            return self._fallback(str(exc)[:300] or type(exc).__name__, query, fusion, seen_entities, rounds)
        if judged.enough:
            return RoundPlan(stop=f"the LLM judged the top {len(top)} hits enough", llm_calls=1)
        if judged.next_query.casefold() in {r.query.casefold() for r in rounds}:
            return self._fallback(f"the LLM's next query {judged.next_query!r} was searched already",
                                  query, fusion, seen_entities, rounds)
        seeds = [k for k in dict.fromkeys(self.link(judged.next_query)) if k not in seen_entities]
        return RoundPlan(seeds=seeds, question=judged.next_query, llm_calls=1,
                         why=f"the LLM read the top {len(top)} hits and asked for more")

    def _fallback(self, reason: str, query: Query, fusion: Fusion, seen: set[str],
                  rounds: Sequence[Round]) -> RoundPlan:
        plan = self.fallback.plan(query, fusion, seen, rounds)
        plan.llm_calls += 1
        note = f"LLM failed ({reason}): {self.fallback.name} driver"
        if plan.stop is not None:
            plan.stop = f"{note} stops: {plan.stop}"
        else:
            plan.why = f"{note}: {plan.why}"
        return plan


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 2)
