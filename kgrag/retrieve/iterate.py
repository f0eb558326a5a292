"""Iterative retrieve–reason rounds after the first retrieval (IRCoT-style, LLM-free by default).

A multi-hop question names its first entity only; the passage that answers the first hop names
the bridge to the next one. After each round a *driver* reads the best fused hits and plans the
next round — new graph seeds, optionally a new question text — or stops. The loop
(``run_rounds``) runs each plan as extra path lists (``graph@2``, ``bm25@2``, ...) fused with
everything found so far, and stops when a driver has nothing new to try, a round adds no new
chunk to the top ``top_k`` (no new evidence), or the round / millisecond budget is spent.
Every round is recorded (``Round``) and shown in the trace.

Two drivers fit the ``IterationDriver`` protocol: ``EntityFeedbackDriver`` here (no LLM: the
entities the best hits name that the question did not), and the LLM driver in
``kgrag.retrieve.llm_rewrites`` when an LLM is configured.

The seeds of a round walk as their own ``graph@2`` list beside the first round's, read from the
top 2 hits; the runs that chose this are in docs/decisions.md, "Iterative retrieval is on".
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kgrag.config import RetrievalSettings
from kgrag.retrieve.fusion import Fusion
from kgrag.retrieve.types import Iteration, PathResult, Query, Round
from kgrag.text.scripts import opening


@dataclass
class RoundPlan:
    """What the next round searches: graph seeds (entity keys) and/or a new question text for
    the keyword and dense paths; ``why`` is shown in the trace. ``stop`` set: no further
    round, for that reason. ``llm_calls``: what planning cost."""

    seeds: list[str] = field(default_factory=list)
    question: str | None = None
    # Text for the dense path only (the LLM-free driver: the question plus the best hit's
    # opening, so the embedding reaches for the next hop's passage).
    dense_text: str | None = None
    why: str = ""
    stop: str | None = None
    llm_calls: int = 0


# The default of ``RetrievalSettings.iterate_max_seeds`` (20). A round seeded with more new
# entities than this follows a list, not a bridge: the hits are a table or an enumeration (an
# e-group's nine roles and their channels), every sibling's pages walk in and push the
# question's own hop out (docs/decisions.md, "No round for a list of siblings").
MAX_ROUND_SEEDS: int = RetrievalSettings.model_fields["iterate_max_seeds"].default


class IterationDriver(Protocol):
    """Plans the next round from what was found so far (or says why to stop)."""

    name: str

    def plan(self, query: Query, fusion: Fusion, seen_entities: set[str], rounds: Sequence[Round]) -> RoundPlan: ...


class EntityFeedbackDriver:
    """LLM-free: the entities named in the ``hits`` best fused chunks that no earlier round
    used (neither the question's own, nor feedback seeds) become graph seeds, and the dense
    path searches again with the question plus the opening ``DENSE_CONTEXT_CHARS`` of the best
    hit (pseudo-relevance feedback: the first hop's passage names the second hop's subject).

    Not run when the question names no entity, or when the graph found no page of a question
    entity (fusion lowered its weight): then the hits are news-like passages whose named entities
    lead nowhere in particular and a round only pushes good hits down (docs/decisions.md, "No round
    without a question entity or its page"). Nor for a follow-up that asks for a neighbour by
    position ("the next one", "the level above that": ``Completion.positional``): the best hits are
    the last turn's list, their entities its siblings (docs/decisions.md, "Positional follow-ups
    are not iterated")."""

    name = "entities"

    def __init__(self, names_in: Callable[[list[str]], dict[str, list[str]]],
                 texts: Callable[[list[str]], list[str]], hits: Callable[[], int] = lambda: 2,
                 max_seeds: Callable[[], int] = lambda: MAX_ROUND_SEEDS):
        """``names_in``: chunk ids → entity keys they mention; ``texts``: chunk ids → texts;
        ``hits``: how many fused hits are read; ``max_seeds``: the most new entities a round
        seeds (more: the driver stops; see ``MAX_ROUND_SEEDS``) — callables: the retriever's
        current settings."""
        self.names_in = names_in
        self.texts = texts
        self.hits = hits
        self.max_seeds = max_seeds

    def plan(self, query: Query, fusion: Fusion, seen_entities: set[str], rounds: Sequence[Round]) -> RoundPlan:
        if not query.linked:
            return RoundPlan(stop="the question names no entity: no chain to follow")
        if "graph" in fusion.reasons:
            return RoundPlan(stop="the graph reached no page of a question entity: nothing to follow")
        if query.completion is not None and query.completion.positional:
            return RoundPlan(stop="a follow-up asking for a neighbour by position ('the next one'): "
                                  "the hits' entities are its siblings, not a bridge")
        n = self.hits()
        top = [item.chunk_id for item in fusion.items[:n]]
        by_chunk = self.names_in(top) if top else {}
        new = list(dict.fromkeys(k for cid in top for k in by_chunk.get(cid, []) if k not in seen_entities))
        if not new:
            return RoundPlan(stop=f"the top {n} hits name no entity not searched already")
        if len(new) > (most := self.max_seeds()):
            return RoundPlan(stop=f"the top {n} hits name {len(new)} new entities (over {most}): "
                                  "a list or table, no one bridge to follow")
        best = self.texts(top[:1])
        dense_text = f"{query.question} {opening(best[0][:DENSE_CONTEXT_CHARS], DENSE_CONTEXT_UNITS)}" if best else None
        return RoundPlan(seeds=new, dense_text=dense_text, why=f"entities named in the top {len(top)} hits")


# Runs one planned round: (query for this round, its plan, round number) → the lists it adds.
SearchRound = Callable[[Query, RoundPlan, int], list[PathResult]]
# Of the best hit, what the dense round reads after the question (docs/decisions.md,
# "Iterative retrieval is on").
DENSE_CONTEXT_CHARS = 600
# ... and at most this many words or Han characters (``kgrag.text.scripts.opening``): 600
# characters of English are about 100 words, but 600 of Chinese are about 450 tokens, several
# times slower to embed for no better ranking (docs/decisions.md, "The dense round's opening is
# counted in words or Han characters").
DENSE_CONTEXT_UNITS = 120
Fuse = Callable[[list[PathResult], Query], Fusion]


def run_rounds(driver: IterationDriver, query: Query, results: list[PathResult], fusion: Fusion,
               search: SearchRound, fuse: Fuse, *, max_rounds: int, budget_ms: float,
               started: float) -> tuple[list[PathResult], Fusion, Iteration]:
    """Rounds 2..``max_rounds`` after the first retrieval (``results``, ``fusion``). ``search``
    runs a round's paths for a query carrying the round's seeds (``Query.feedback``) and
    question; ``fuse`` fuses all lists so far. ``started``: perf_counter at the request's start
    (the millisecond budget covers the whole retrieval)."""
    first = Round(1, query.question, new_entities=[le.key for le in query.linked] + list(query.feedback),
                  hits_added=_top(fusion, query.top_k), paths=[r.name for r in results], why="the question")
    rounds = [first]
    seen = {le.key for le in query.linked} | set(query.feedback)
    if query.exclusion is not None:  # an excluded topic's entities never seed a round
        seen |= query.exclusion.entities
    stopped = f"round budget ({max_rounds}) spent"
    llm_calls = 0
    for number in range(2, max_rounds + 1):
        if (time.perf_counter() - started) * 1000.0 >= budget_ms:
            stopped = f"time budget ({budget_ms:g} ms) spent"
            break
        t = time.perf_counter()
        plan = driver.plan(query, fusion, seen, rounds)
        llm_calls += plan.llm_calls
        if plan.stop is not None:
            stopped = plan.stop
            break
        seen.update(plan.seeds)
        round_query = copy.copy(query)
        round_query.feedback = list(dict.fromkeys([*query.feedback, *plan.seeds]))
        round_query.question = plan.question or query.question
        added = search(round_query, plan, number)
        before = set(_top(fusion, query.top_k))
        results = [*results, *added]
        fusion = fuse(results, query)
        new_hits = [cid for cid in _top(fusion, query.top_k) if cid not in before]
        rounds.append(Round(number, round_query.question, plan.seeds, new_hits, [r.name for r in added],
                            plan.why, round((time.perf_counter() - t) * 1000.0, 2)))
        if not new_hits:
            stopped = "the round added no new evidence"
            break
    return results, fusion, Iteration(driver.name, rounds, stopped, llm_calls)


def _top(fusion: Fusion, k: int) -> list[str]:
    return [item.chunk_id for item in fusion.items[:k]]
