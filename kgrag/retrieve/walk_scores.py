"""The graph walk's candidates as arrays: every (chunk, reached entity, route) the walk found,
scored without a Python loop over them.

At 100k passages a walk reaches ~300 entities and their first 50 mentions each: ~11k
candidates a walk, and up to three walks a question (the first retrieval and its iteration
rounds). Scoring them with dicts of lists was a third of the graph path (py-spy, 60 HotpotQA
questions at 100k: 21 of 61 ms thread time a walk); the same rules over numpy arrays are
below. Results equal the dict version's (``tests/test_reached.py`` keeps that version and
compares rankings, scores, evidence and support on random walks); a score may differ in its
last bit where a (chunk, seed) pair sums more than eight gains (numpy adds those pairwise).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from kgrag.retrieve.tuning import GRAPH_WALK
from kgrag.retrieve.types import SeedSupport
from kgrag.types import GraphPath


@dataclass
class Reached:
    """Candidates in the walk's order: entry ``i`` is chunk ``chunk_ids[chunk[i]]`` mentioning
    entity ``entities[entity[i]]``, reached by route ``routes[entity][route[i]]`` (route 0: the
    entity's best) from seed ``seeds[seed[i]]``, with ``gain[i]`` = route weight × mention boost."""

    chunk_ids: list[str]
    entities: list[str]
    seeds: list[str]
    routes: Mapping[str, list[tuple[float, GraphPath]]]
    chunk: np.ndarray  # int, per entry
    entity: np.ndarray  # int
    route: np.ndarray  # int
    seed: np.ndarray  # int
    gain: np.ndarray  # float64

    @staticmethod
    def collect(mentions: Mapping[str, list[tuple[str, int]]],
                routes: Mapping[str, list[tuple[float, GraphPath]]]) -> Reached:
        """Every (chunk, entity, route) from each entity's mentions (chunk id, count) and
        routes; a chunk that mentions an entity ``count`` times gains ``1 + GRAPH_WALK.mention_boost × ln count``."""
        chunk_ix: dict[str, int] = {}
        seed_ix: dict[str, int] = {}
        entities: list[str] = []
        rows: list[int] = []  # per entry
        counts: list[int] = []
        segments: list[tuple[int, int, int, float, int]] = []  # entity, route, seed, weight, entries
        for key, found in mentions.items():
            e = len(entities)
            entities.append(key)
            mine = [chunk_ix.setdefault(chunk_id, len(chunk_ix)) for chunk_id, _ in found]
            times = [count for _, count in found]
            # One run of entries per route: an entity's routes start at different seeds, so no
            # rule below depends on how one entity's entries for two routes interleave.
            for i, (weight, path) in enumerate(routes[key]):
                rows.extend(mine)
                counts.extend(times)
                segments.append((e, i, seed_ix.setdefault(path.nodes[0], len(seed_ix)), weight, len(mine)))
        n = np.array([s[4] for s in segments], dtype=np.int64)
        count = np.array(counts, dtype=np.int64)
        held = np.unique(count)
        boost = np.array([1.0 + GRAPH_WALK.mention_boost * math.log(c) for c in held.tolist()], dtype=np.float64)
        return Reached(list(chunk_ix), entities, list(seed_ix), routes,
                       np.array(rows, dtype=np.int64),
                       np.repeat(np.array([s[0] for s in segments], dtype=np.int64), n),
                       np.repeat(np.array([s[1] for s in segments], dtype=np.int64), n),
                       np.repeat(np.array([s[2] for s in segments], dtype=np.int64), n),
                       np.repeat(np.array([s[3] for s in segments], dtype=np.float64), n)
                       * boost[np.searchsorted(held, count)])

    def __len__(self) -> int:
        return len(self.gain)

    @functools.cached_property
    def row_of(self) -> dict[str, int]:
        """chunk id → its index in ``chunk_ids``."""
        return {cid: i for i, cid in enumerate(self.chunk_ids)}

    def path(self, i: int) -> GraphPath:
        return self.routes[self.entities[int(self.entity[i])]][int(self.route[i])][1]

    def home_candidates(self, k: int, question: Iterable[str], overall: int, per_seed: int) -> set[str]:
        """The chunks whose titles are read: the ``max(k, overall)`` strongest by their best
        gain, and each question entity's own ``per_seed`` strongest (an entity whose neighbours
        are weaker than a feedback seed's still has its bridge's page recognized)."""
        if not len(self):
            return set()
        head = set(self._strongest(np.ones(len(self), dtype=bool), max(k, overall)))
        seed_ix = {seed: i for i, seed in enumerate(self.seeds)}
        for s in sorted(seed_ix[q] for q in set(question) if q in seed_ix):
            head.update(self._strongest(self.seed == s, per_seed))
        return head

    def _strongest(self, mask: np.ndarray, n: int) -> list[str]:
        """The ``n`` chunks with the highest best gain among the entries in ``mask`` (gains
        above zero; ties: the smaller chunk id)."""
        best = np.zeros(len(self.chunk_ids), dtype=np.float64)
        np.maximum.at(best, self.chunk[mask], self.gain[mask])
        return [self.chunk_ids[i] for i in top_rows(best, n, self.chunk_ids)]

    def home_mask(self, homes: Mapping[str, set[str]]) -> np.ndarray:
        """Entries whose chunk's title names their entity (``homes``: chunk id → entities)."""
        mask = np.zeros(len(self), dtype=bool)
        if not homes:
            return mask
        entity_ix = {key: i for i, key in enumerate(self.entities)}
        chunk_ix = self.row_of
        width = len(self.entities)
        pairs = [chunk_ix[cid] * width + entity_ix[key] for cid, keys in homes.items() if cid in chunk_ix
                 for key in keys if key in entity_ix]
        if pairs:
            mask = np.isin(self.chunk * width + self.entity, np.array(pairs, dtype=np.int64))
        return mask

    def scores(self, gain: np.ndarray) -> np.ndarray:
        """Per chunk (index into ``chunk_ids``): each seed contributes the best gain of the
        chunk's best routes (route 0) from it, plus ``GRAPH_WALK.secondary_share`` of the others' sum — a
        chunk tied to two of the question's entities beats one tied to either (the multi-hop
        case), but naming many minor neighbours of one generic entity does not add up to a
        strong hit (measured: plain sums ranked sports-season pages first for "university")."""
        out = np.zeros(len(self.chunk_ids), dtype=np.float64)
        primary = self.route == 0
        if not primary.any():
            return out
        group = self.chunk[primary] * len(self.seeds) + self.seed[primary]
        order = np.argsort(group, kind="stable")
        sorted_groups = group[order]
        g = gain[primary][order]
        starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
        best = np.maximum.reduceat(g, starts)
        total = np.add.reduceat(g, starts)
        np.add.at(out, sorted_groups[starts] // len(self.seeds), best + GRAPH_WALK.secondary_share * (total - best))
        return out

    def support(self, gain: np.ndarray, home: np.ndarray) -> dict[str, dict[str, SeedSupport]]:
        """chunk → seed → the best home route from that seed (the entity the chunk is about)."""
        out: dict[str, dict[str, SeedSupport]] = {}
        for i in np.flatnonzero(home).tolist():
            path = self.path(i)
            seed = path.nodes[0]
            by_seed = out.setdefault(self.chunk_ids[int(self.chunk[i])], {})
            held = by_seed.get(seed)
            if held is None or gain[i] > held.gain:
                by_seed[seed] = SeedSupport(seed, self.entities[int(self.entity[i])], path.hops, float(gain[i]))
        return out

    def evidence(self, gain: np.ndarray, chunk_ids: list[str]) -> dict[str, list[tuple[float, GraphPath]]]:
        """chunk → (gain, path) of each best route into it, in the walk's order, for ``chunk_ids``."""
        wanted: dict[str, list[tuple[float, GraphPath]]] = {cid: [] for cid in chunk_ids}
        rows = np.array([self.row_of[c] for c in chunk_ids if c in self.row_of], dtype=np.int64)
        for i in np.flatnonzero((self.route == 0) & np.isin(self.chunk, rows)).tolist():
            wanted[self.chunk_ids[int(self.chunk[i])]].append((float(gain[i]), self.path(i)))
        return wanted


def top_rows(values: np.ndarray, n: int, names: list[str]) -> list[int]:
    """Rows of the ``n`` highest values above zero, best first; ties: the smaller name."""
    positive = np.flatnonzero(values > 0)
    if len(positive) > n:
        cut = np.partition(values[positive], len(positive) - n)[len(positive) - n]
        positive = positive[values[positive] >= cut]
    held = values.tolist()
    return sorted(positive.tolist(), key=lambda i: (-held[i], names[i]))[:n]
