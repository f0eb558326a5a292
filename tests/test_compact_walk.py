"""``CompactGraph.select_level`` (the vectorised walk level) chooses exactly what
``graph_walk.best_paths``' Python loop chooses on the same edges — same entities, scores,
predecessors, edge types — on random graphs built to have ties (integer weights), hubs, small
limits (the cut between kept and dropped candidates falls inside ties) and an overlay of
changes (set and removed edges, entities only the overlay knows)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kgrag.stores.graph_walk import NetworkxAdjacency, best_paths, build_entity_graph
from kgrag.stores.sqlite.compact_graph import CompactGraph, _from_pairs


def random_edges(rng: random.Random, nodes: int, edges: int) -> list[tuple[str, str, str, float]]:
    keys = [f"e{i:03d}" for i in range(nodes)]
    hubs = keys[:3]
    rows = []
    for _ in range(edges):
        a = rng.choice(hubs) if rng.random() < 0.4 else rng.choice(keys)
        b = rng.choice(keys)
        if a != b:
            rows.append((a, b, rng.choice(["CO_OCCURS", "DEFINED_IN", "PART_OF"]), float(rng.randint(1, 3))))
    return rows


def compact_from(rows: list[tuple[str, str, str, float]]) -> CompactGraph:
    keys = sorted({k for a, b, _, _ in rows for k in (a, b)})
    index = {k: i for i, k in enumerate(keys)}
    types = sorted({t for *_, t, _ in rows})
    a = np.array([index[r[0]] for r in rows], dtype=np.int64)
    b = np.array([index[r[1]] for r in rows], dtype=np.int64)
    return _from_pairs(keys, np.minimum(a, b), np.maximum(a, b), np.array([types.index(r[2]) for r in rows]),
                       np.array([r[3] for r in rows], dtype=np.float64), types)


def python_walk(graph: CompactGraph, starts, hops, limit):
    """The Python loop of ``best_paths`` over the same graph (its ``adjacent``)."""

    class Plain:
        def __contains__(self, key):
            return key in graph

        def adjacent(self, key):
            return graph.adjacent(key)

    return best_paths(Plain(), starts, hops, limit)


def as_tuples(paths):
    return {k: (p.nodes, p.edges, p.weights) for k, p in paths.items()}


@pytest.mark.parametrize("seed", range(40))
def test_vectorised_levels_choose_what_the_python_loop_chooses(seed):
    rng = random.Random(seed)
    rows = random_edges(rng, nodes=rng.randint(8, 60), edges=rng.randint(10, 300))
    graph = compact_from(rows)
    keys = sorted(graph.nodes())
    if seed % 2:  # changes since the build: set, replace and remove edges, a brand-new entity
        for _ in range(rng.randint(1, 12)):
            a, b = rng.choice(keys), rng.choice([*keys, "zz-new"])
            if a != b:
                graph.set_edge(a, b, None if rng.random() < 0.3 else (float(rng.randint(1, 3)), "PART_OF"))
    for _ in range(6):
        starts = rng.sample(keys, rng.randint(1, min(3, len(keys))))
        hops, limit = rng.randint(1, 3), rng.choice([2, 5, 10, 50, 500])
        assert as_tuples(best_paths(graph, starts, hops, limit)) == as_tuples(python_walk(graph, starts, hops, limit))


def test_vectorised_walk_equals_the_networkx_reference_without_changes():
    rows = random_edges(random.Random(7), nodes=80, edges=600)
    graph, reference = compact_from(rows), NetworkxAdjacency(build_entity_graph(rows))
    for start in sorted(graph.nodes())[::7]:
        got, want = best_paths(graph, [start], 2, 40), best_paths(reference, [start], 2, 40)
        assert {k: (p.nodes, p.edges, [round(w, 9) for w in p.weights]) for k, p in got.items()} == \
               {k: (p.nodes, p.edges, [round(w, 9) for w in p.weights]) for k, p in want.items()}
        assert len(got) == min(40, len(want))
