"""The graph walk's array scoring (``kgrag.retrieve.walk_scores``) equals the dict-of-lists version it
replaced, kept here as the reference: same chunks read for their titles, same scores and
ranking, same evidence and seed support, on random walks with ties, several routes per entity
and home bonuses."""

from __future__ import annotations

import heapq
import math
import random

import numpy as np
import pytest

from kgrag.retrieve.tuning import GRAPH_WALK
from kgrag.retrieve.types import SeedSupport
from kgrag.retrieve.walk_scores import Reached, top_rows
from kgrag.types import GraphPath


def _reference(mentions, routes, homes, k, question, overall, per_seed):
    """The walk's scoring as it was written before the arrays (kgrag.retrieve.paths, 264f843)."""
    found = []
    for key, ms in mentions.items():
        for chunk_id, count in ms:
            boost = 1.0 + 0.25 * math.log(count)
            for i, (weight, path) in enumerate(routes[key]):
                found.append((chunk_id, key, weight * boost, path, i == 0))
    best: dict[str, float] = {}
    by_seed_best: dict[str, dict[str, float]] = {}
    for cid, _, gain, path, _ in found:
        if gain > best.get(cid, 0.0):
            best[cid] = gain
        if path.nodes[0] in question:
            mine = by_seed_best.setdefault(path.nodes[0], {})
            if gain > mine.get(cid, 0.0):
                mine[cid] = gain
    head = {c for c, _ in heapq.nsmallest(max(k, overall), best.items(), key=lambda kv: (-kv[1], kv[0]))}
    for mine in by_seed_best.values():
        head.update(c for c, _ in heapq.nsmallest(per_seed, mine.items(), key=lambda kv: (-kv[1], kv[0])))
    gains: dict[str, dict[str, list[float]]] = {}
    evidence: dict[str, list[tuple[float, GraphPath]]] = {}
    support: dict[str, dict[str, SeedSupport]] = {}
    for chunk_id, key, gain, path, primary in found:
        seed = path.nodes[0]
        if key in homes.get(chunk_id, ()):
            gain *= GRAPH_WALK.home_bonus
            held = support.setdefault(chunk_id, {}).get(seed)
            if held is None or gain > held.gain:
                support[chunk_id][seed] = SeedSupport(seed, key, path.hops, gain)
        if primary:
            gains.setdefault(chunk_id, {}).setdefault(seed, []).append(gain)
            evidence.setdefault(chunk_id, []).append((gain, path))
    scores = {}
    for cid, by_seed in gains.items():
        total = 0.0
        for seed_gains in by_seed.values():
            top = max(seed_gains)
            total += top + GRAPH_WALK.secondary_share * (sum(seed_gains) - top)
        scores[cid] = total
    ranked = heapq.nsmallest(k, scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return head, ranked, {cid: evidence[cid] for cid, _ in ranked}, support


def _random_walk(rng: random.Random):
    seeds = [f"s{i}" for i in range(rng.randint(1, 4))]
    chunks = [f"c{i:03d}" for i in range(rng.randint(5, 80))]
    routes, mentions = {}, {}
    for e in range(rng.randint(1, 40)):
        key = f"e{e}"
        starts = rng.sample(seeds, rng.randint(1, len(seeds)))
        # A coarse weight grid makes exact ties between chunks common.
        options = [(rng.choice([0.1, 0.2, 0.25, 0.5, 1.0]), GraphPath([s, key], ["co"], [1.0])) for s in starts]
        routes[key] = sorted(options, key=lambda wp: -wp[0])
        mentions[key] = [(c, rng.choice([1, 1, 2, 3, 7])) for c in rng.sample(chunks, rng.randint(1, min(12, len(chunks))))]
    homes = {c: set(rng.sample(list(routes), rng.randint(0, min(2, len(routes))))) for c in rng.sample(chunks, rng.randint(0, len(chunks) // 2))}
    question = set(rng.sample(seeds, rng.randint(0, len(seeds))))
    return mentions, routes, homes, question


@pytest.mark.parametrize("seed", range(300))
def test_array_scoring_equals_the_dict_version(seed):
    rng = random.Random(seed)
    mentions, routes, homes, question = _random_walk(rng)
    k, overall, per_seed = rng.choice([(3, 5, 2), (10, 15, 3), (50, 150, 20)])
    head, ranked, evidence, support = _reference(mentions, routes, homes, k, question, overall, per_seed)

    reached = Reached.collect(mentions, routes)
    assert reached.home_candidates(k, question, overall, per_seed) == head
    home = reached.home_mask(homes)
    gain = np.where(home, reached.gain * GRAPH_WALK.home_bonus, reached.gain)
    scores = reached.scores(gain)
    mine = [(reached.chunk_ids[i], float(scores[i])) for i in top_rows(scores, k, reached.chunk_ids)]
    assert [c for c, _ in mine] == [c for c, _ in ranked]
    assert [s for _, s in mine] == pytest.approx([s for _, s in ranked], rel=1e-12)
    assert reached.evidence(gain, [c for c, _ in mine]) == evidence
    assert reached.support(gain, home) == support


def test_no_mentions_reach_nothing():
    reached = Reached.collect({}, {})
    assert reached.home_candidates(5, {"s"}, 10, 2) == set()
    assert top_rows(reached.scores(reached.gain), 5, reached.chunk_ids) == []
    assert reached.evidence(reached.gain, []) == {}
