"""Best paths from start entities over a weighted entity graph (used by every graph store).

"Best" is fixed here for every store: fewest hops first; among paths with as many hops, the
highest *sum* of edge weights (a sum rewards several strong links without letting one weak
link veto the path, as a product or a bottleneck would); remaining ties go to the
lexicographically smallest predecessor so results are deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Container, Iterable, Mapping, Sequence
from typing import Protocol

import networkx as nx

from kgrag.types import GraphPath


def merge_parallel_edges(edges: Iterable[tuple[str, str, str, float]]) -> dict[tuple[str, str], tuple[float, str]]:
    """(source, target, type, weight) rows → {(a, b) with a <= b: (weight, type)}. Parallel
    relations between two entities, either direction, merge into one undirected edge: weight =
    their sum, type = the heaviest relation type (ties: the smallest type name)."""
    weights: dict[tuple[str, str], dict[str, float]] = {}
    for source, target, rel_type, weight in edges:
        pair = (source, target) if source <= target else (target, source)
        by_type = weights.setdefault(pair, {})
        by_type[rel_type] = by_type.get(rel_type, 0.0) + weight
    return {
        pair: (sum(by_type.values()), min(by_type, key=lambda t: (-by_type[t], t)))
        for pair, by_type in weights.items()
    }


def build_entity_graph(edges: Sequence[tuple[str, str, str, float]]) -> nx.Graph:
    """Undirected graph from (source, target, type, weight) rows (see ``merge_parallel_edges``)."""
    graph = nx.Graph()
    graph.add_edges_from(
        (a, b, {"weight": weight, "type": rel_type})
        for (a, b), (weight, rel_type) in merge_parallel_edges(edges).items()
    )
    return graph


class Adjacency(Protocol):
    """What ``best_paths`` walks: the edges at a node (an in-memory graph of any layout)."""

    def __contains__(self, key: object) -> bool: ...

    def adjacent(self, key: str) -> Iterable[tuple[str, float, str]]:
        """(neighbour, merged weight, relation type) per edge at ``key``."""
        ...


def best_paths(graph: Adjacency, starts: Sequence[str], hops: int, limit: int) -> dict[str, GraphPath]:
    """``walk_levels`` over an in-memory graph (its own ``select_level`` when it has one: the
    same choice, vectorised — ``CompactGraph``)."""
    fast = getattr(graph, "select_level", None)
    if fast is not None:
        return walk_levels(fast, starts, hops, limit)

    def select(frontier: Mapping[str, float], reached: Container[str], room: int) -> list[Reached]:
        candidates: dict[str, tuple[float, str, tuple[float, str]]] = {}
        for u in sorted(frontier):  # sorted, and ">" below: ties keep the smallest predecessor
            for v, weight, rel_type in graph.adjacent(u):
                if v in reached:
                    continue
                s = frontier[u] + weight
                if v not in candidates or s > candidates[v][0]:
                    candidates[v] = (s, u, (weight, rel_type))
        chosen = sorted(candidates, key=lambda v: (-candidates[v][0], v))[:room]
        return [(v, *candidates[v]) for v in chosen]

    return walk_levels(select, starts, hops, limit)


class NetworkxAdjacency:
    """A networkx graph (``build_entity_graph``) seen as an ``Adjacency``."""

    def __init__(self, graph: nx.Graph):
        self.graph = graph

    def __contains__(self, key: object) -> bool:
        return key in self.graph

    def adjacent(self, key: str) -> Iterable[tuple[str, float, str]]:
        if key in self.graph:
            for v, data in self.graph[key].items():
                yield v, data["weight"], data["type"]


# (entity, score, predecessor, (edge weight, edge type)): one entity a level reached.
Reached = tuple[str, float, str, tuple[float, str]]


def walk_levels(
    select: Callable[[Mapping[str, float], Collection[str], int], Sequence[Reached]],
    starts: Sequence[str],
    hops: int,
    limit: int,
) -> dict[str, GraphPath]:
    """Breadth-first, one hop level at a time, at most ``limit`` entities in all (start keys
    count; at each level the heaviest new entities are kept first).

    ``select(frontier scores, reached, room)`` makes one level's choice: among entities not yet
    reached that an edge joins to the frontier, each with its best predecessor (highest
    frontier score + merged edge weight; ties: the smallest predecessor key), the ``room``
    highest-scoring ones (ties: the smallest key), best first. The embedded store chooses in
    Python (``best_paths``); the Neo4j store in one Cypher statement per level, so only the
    chosen entities cross the wire.
    """
    # predecessor per reached entity (None for a start key), with the edge that reached it
    pred: dict[str, str | None] = {}
    via: dict[str, tuple[float, str]] = {}
    score: dict[str, float] = {}
    for key in starts:
        if key not in pred and len(pred) < limit:
            pred[key], score[key] = None, 0.0
    frontier = sorted(pred)
    for _ in range(hops):
        if not frontier or len(pred) >= limit:
            break
        chosen = select({u: score[u] for u in frontier}, pred.keys(), limit - len(pred))
        for v, s, u, edge in chosen:
            score[v], pred[v], via[v] = s, u, edge
        frontier = sorted(v for v, *_ in chosen)
    return {key: _path_to(pred, via, key) for key in pred}


def _path_to(pred: dict[str, str | None], via: dict[str, tuple[float, str]], key: str) -> GraphPath:
    nodes = [key]
    while (previous := pred[nodes[-1]]) is not None:
        nodes.append(previous)
    nodes.reverse()
    return GraphPath(
        nodes=nodes,
        edges=[via[v][1] for v in nodes[1:]],
        weights=[float(via[v][0]) for v in nodes[1:]],
    )
