"""Best paths from start entities over a weighted entity graph (used by every graph store).

"Best" is fixed here for every store: fewest hops first; among paths with as many hops, the
highest *sum* of edge weights (a sum rewards several strong links without letting one weak
link veto the path, as a product or a bottleneck would); remaining ties go to the
lexicographically smallest predecessor so results are deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import networkx as nx

from kgrag.types import GraphPath


Adjacency = Mapping[str, Mapping[str, tuple[float, str]]]  # u → v → (weight, type)


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


def best_paths(graph: nx.Graph, starts: Sequence[str], hops: int, limit: int) -> dict[str, GraphPath]:
    """``walk_best_paths`` over an in-memory graph."""

    def expand(frontier: Sequence[str]) -> Adjacency:
        return {
            u: {v: (data["weight"], data["type"]) for v, data in graph[u].items()}
            for u in frontier
            if u in graph
        }

    return walk_best_paths(expand, starts, hops, limit)


def walk_best_paths(
    expand: Callable[[Sequence[str]], Adjacency], starts: Sequence[str], hops: int, limit: int
) -> dict[str, GraphPath]:
    """Breadth-first, one hop level at a time, at most ``limit`` entities in all (start keys
    count; at each level the heaviest new entities are kept first).

    ``expand(frontier)`` gives the merged undirected edges of every frontier entity, so a store
    that keeps its graph elsewhere (Neo4j) answers one level per round trip.
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
        adjacency = expand(frontier)
        candidates: dict[str, tuple[float, str, tuple[float, str]]] = {}
        for u in frontier:  # sorted, and ">" below: ties keep the smallest predecessor
            for v, edge in adjacency.get(u, {}).items():
                if v in pred:
                    continue
                s = score[u] + edge[0]
                if v not in candidates or s > candidates[v][0]:
                    candidates[v] = (s, u, edge)
        chosen = sorted(candidates, key=lambda v: (-candidates[v][0], v))[: limit - len(pred)]
        for v in chosen:
            score[v], pred[v], via[v] = candidates[v]
        frontier = sorted(chosen)
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
