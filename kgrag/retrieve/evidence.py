"""Evidence the graph path's routes give fusion: how far to trust the graph for this question,
and which passages together answer it.

Most corpora kgrag serves have a page *about* each important entity — a Wikipedia article, a
manual section, a glossary entry — whose title names it: the entity's **page** (the graph path
calls it the entity's home). A multi-hop question names entities and asks about what they lead
to: "Which film's director was born later, A or B?" needs the pages of A and B *and* of both
directors. Ranked fusion keeps the individually best passages, which for such a question are
many passages about A and B and none about the directors; an answerable *set* needs each
named entity's page and its bridge. Two rules read that off the routes the graph path walked
(``PathResult.support``); no model, no LLM:

- ``graph_has_structure``: the graph is trusted as a full voter only when one of its top hits is
  the page of a question or feedback entity. Without such a page its hits are passages that
  merely mention the question's names — on a news corpus that adds nothing BM25 has not
  ranked better.
- ``evidence_set``: per entity the question names, its page, then per such entity its best
  *bridge* — the page of an entity reached from it (a film's director), or, for the entity
  whose page the keyword path ranked first, the page of an entity that page names (the
  feedback seeds).

The runs that chose these rules, and the variants compared by replaying fusion over cached path
results (``benchmarks/fusion_replay.py``), are in docs/decisions.md, "Three paths fused, with
the evidence set".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kgrag.retrieve.types import PathResult, Query, SeedSupport

# What ``evidence_set`` places, in the trace.
ENTITY_PAGE = "entity_page"
BRIDGE = "bridge"


@dataclass(frozen=True)
class Placement:
    """One passage of the evidence set and why: the question entity (its key and how the
    question wrote it) it covers, the entity whose page it is, and how many hops apart they are
    (0: the question entity's own page)."""

    chunk_id: str
    rule: str  # ENTITY_PAGE | BRIDGE
    entity: str
    surface: str
    page_of: str
    hops: int

    def trace(self) -> dict[str, object]:
        return {"rule": self.rule, "entity": self.entity, "surface": self.surface,
                "page_of": self.page_of, "hops": self.hops}


def graph_has_structure(graph: PathResult, top: int) -> bool:
    """Whether one of the graph's first ``top`` hits is the page of an entity it started from
    (a question entity, or a feedback entity read from the best keyword hit).

    Such a page is usually right where titles name entities; where no title does (news), most
    graph-only hits are wrong and the graph at full weight costs BM25 recall (docs/decisions.md,
    "Three paths fused, with the evidence set")."""
    return any(s.hops == 0 for hit in graph.hits[:top] for s in graph.support.get(hit.id, {}).values())


def evidence_set(query: Query, graph: PathResult,
                 names_in: Callable[[list[str]], dict[str, list[str]]] | None = None) -> list[Placement]:
    """Pages of the question's entities (in question order), then one bridge per entity whose
    page was found. An alias that names several entities counts once, by its best page.

    A bridge of entity *q* is the page of an entity walked to from *q* (hops ≥ 1) or — when *q*'s
    page is the keyword hit the feedback seeds were read from — of a feedback seed; the strongest
    such route wins (the graph path's gain: hop decay, edge weight, specificity). Entities that
    *q*'s own page names go first (``names_in``: chunk id → entity keys it mentions): "the
    director of X" is named on X's page, while a page that merely mentions X (a review, a
    filmography) links back to it. The other entities remain as the fallback: keeping *only*
    the named ones cost recall. A bridge is placed after the pages (rank 3–4), so a single-hop
    question loses nothing (docs/decisions.md, "Three paths fused, with the evidence set")."""
    support = graph.support
    by_surface: dict[str, set[str]] = {}
    for le in query.linked:
        by_surface.setdefault(le.surface, set()).add(le.key)
    pages: list[Placement] = []
    taken: set[str] = set()
    for surface, keys in by_surface.items():
        best = _best(support, _page_of(keys), taken)
        if best is not None:
            chunk_id, s = best
            pages.append(Placement(chunk_id, ENTITY_PAGE, s.seed, surface, s.entity, 0))
            taken.add(chunk_id)
    named = names_in([p.chunk_id for p in pages]) if names_in and pages else None
    bridges: list[Placement] = []
    for page in pages:
        feedback = set(query.feedback) if page.chunk_id in query.feedback_from else set()
        best = None
        if named is not None:
            best = _best(support, _bridge_of(page.entity, feedback, set(named.get(page.chunk_id, ()))), taken)
        if best is None:
            best = _best(support, _bridge_of(page.entity, feedback, None), taken)
        if best is not None:
            chunk_id, s = best
            hops = s.hops if s.seed == page.entity else s.hops + 1
            bridges.append(Placement(chunk_id, BRIDGE, page.entity, page.surface, s.entity, hops))
            taken.add(chunk_id)
    return pages + bridges


RouteTest = Callable[[str, SeedSupport], bool]


def _page_of(keys: set[str]) -> RouteTest:
    """A route that makes the chunk the page of one of ``keys`` (the entities an alias names)."""
    return lambda seed, s: seed in keys and s.hops == 0


def _bridge_of(entity: str, feedback: set[str], named: set[str] | None) -> RouteTest:
    """A route into the page of an entity walked to from ``entity``, or of one of ``feedback``
    (the seeds read from ``entity``'s page); with ``named``, only of an entity in it."""
    def test(seed: str, s: SeedSupport) -> bool:
        if named is not None and s.entity not in named:
            return False
        return (seed == entity and s.hops >= 1) or (seed in feedback and s.hops == 0)
    return test


def _best(support: dict[str, dict[str, SeedSupport]], route_ok: RouteTest,
          taken: set[str]) -> tuple[str, SeedSupport] | None:
    """The chunk (not yet taken) with the strongest route that ``route_ok(seed, support)``
    accepts; ties: the smaller chunk id."""
    best: tuple[float, str, SeedSupport] | None = None
    for chunk_id, by_seed in support.items():
        if chunk_id in taken:
            continue
        for seed, s in by_seed.items():
            if route_ok(seed, s) and (best is None or s.gain > best[0]
                                      or (s.gain == best[0] and chunk_id < best[1])):
                best = (s.gain, chunk_id, s)
    return None if best is None else (best[1], best[2])
