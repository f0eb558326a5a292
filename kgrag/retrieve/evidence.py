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
  merely mention the question's names — on a news corpus (rgb_zh_dev200) that adds nothing
  BM25 has not ranked better.
- ``evidence_set``: per entity the question names, its page, then per such entity its best
  *bridge* — the page of an entity reached from it (a film's director), or, for the entity
  whose page the keyword path ranked first, the page of an entity that page names (the
  feedback seeds).

Measured with ``kgrag eval`` (bm25+dense+graph R@5, before → after this stage and the graph
walk's per-seed routes): 2wiki_dev468 76.4 → 93.5 (bridge-comparison 58.9 → 95.3, AllGold@5
49.8 → 84.8), hotpotqa_dev500 88.1 → 91.3, musique_train100 70.7 → 74.2, rgb_zh_dev200 40.8 →
45.0; the README has every set. Variants were compared by replaying fusion over cached path
results (``benchmarks/fusion_replay.py``).
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

    Measured on the graph's top-10 hits (precision = gold share): such a page is right 53–98%
    of the time on the English multi-hop sets (2wiki, HotpotQA, MuSiQue), while on the Chinese
    news set, where no title names an entity, 73% of graph-only hits are wrong and fusing the
    graph at full weight cost BM25 3.5 points of R@5 (44.3 → 40.8)."""
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
    filmography) links back to it. Measured with vs without that preference (R@5):
    2wiki_dev468 93.6 vs 93.0 (bridge-comparison 95.3 vs 93.7), the other sets equal; keeping
    *only* such entities cost MuSiQue 1.2, so the others remain as the fallback.

    Precision on the sets (gold share): a question entity's page 89–99%; its bridge 58%
    (HotpotQA) to 77% (2wiki) when the question names one entity, and at rank 3–4 after the
    pages it costs a single-hop question nothing (CMRC R@5 unchanged)."""
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
