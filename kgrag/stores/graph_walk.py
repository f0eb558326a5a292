"""Best paths from start entities over a weighted entity graph (used by the embedded graph store).

"Best" is fixed here for every store: fewest hops first; among paths with as many hops, the
highest *sum* of edge weights (a sum rewards several strong links without letting one weak
link veto the path, as a product or a bottleneck would); remaining ties go to the
lexicographically smallest predecessor so results are deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx

from kgrag.types import GraphPath


def build_entity_graph(edges: Sequence[tuple[str, str, str, float]]) -> nx.Graph:
    """Undirected graph from (source, target, type, weight) rows. Parallel relations between
    two entities merge into one edge: weight = their sum, type = the heaviest relation type."""
    weights: dict[tuple[str, str], dict[str, float]] = {}
    for source, target, rel_type, weight in edges:
        pair = (source, target) if source <= target else (target, source)
        by_type = weights.setdefault(pair, {})
        by_type[rel_type] = by_type.get(rel_type, 0.0) + weight
    graph = nx.Graph()
    graph.add_edges_from(
        (a, b, {"weight": sum(by_type.values()), "type": min(by_type, key=lambda t: (-by_type[t], t))})
        for (a, b), by_type in weights.items()
    )
    return graph


def best_paths(graph: nx.Graph, starts: Sequence[str], hops: int, limit: int) -> dict[str, GraphPath]:
    """Breadth-first, one hop level at a time, at most ``limit`` entities in all (start keys
    count; at each level the heaviest new entities are kept first)."""
    # predecessor per reached entity: None for a start key
    pred: dict[str, str | None] = {}
    score: dict[str, float] = {}
    for key in starts:
        if key not in pred and len(pred) < limit:
            pred[key], score[key] = None, 0.0
    frontier = sorted(pred)
    for _ in range(hops):
        if not frontier or len(pred) >= limit:
            break
        candidates: dict[str, tuple[float, str]] = {}
        for u in frontier:  # sorted, and ">" below: ties keep the smallest predecessor
            if u not in graph:
                continue
            for v, data in graph[u].items():
                if v in pred:
                    continue
                s = score[u] + data["weight"]
                if v not in candidates or s > candidates[v][0]:
                    candidates[v] = (s, u)
        chosen = sorted(candidates, key=lambda v: (-candidates[v][0], v))[: limit - len(pred)]
        for v in chosen:
            score[v], pred[v] = candidates[v]
        frontier = sorted(chosen)
    return {key: _path_to(graph, pred, key) for key in pred}


def _path_to(graph: nx.Graph, pred: dict[str, str | None], key: str) -> GraphPath:
    nodes = [key]
    while (previous := pred[nodes[-1]]) is not None:
        nodes.append(previous)
    nodes.reverse()
    pairs = list(zip(nodes, nodes[1:]))
    return GraphPath(
        nodes=nodes,
        edges=[graph[a][b]["type"] for a, b in pairs],
        weights=[float(graph[a][b]["weight"]) for a, b in pairs],
    )
