"""The fusion stage: how much each path's evidence is worth for this question, one ranked list
from the paths' lists, and the set of passages that together answer a multi-hop question.

Weighted reciprocal-rank fusion, score(d) = Σ_path weight_path / (k + rank_path(d)), needs no
score calibration between paths (a BM25 score, a cosine and a graph score live on different
scales) and is robust to one path's bad day; the weights let a deployment lean on the path that
suits its documents. Around it (``fuse``): the graph's weight drops for a question where its
hits show no structure, each trusted path's first hit keeps a head place, and the evidence set
(``kgrag.retrieve.evidence``) — each question entity's page and its bridge — is placed right
after the first fused hit. Every hit records the rule that placed it, for the trace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kgrag.config import RetrievalSettings
from kgrag.retrieve.evidence import Placement, evidence_set, graph_has_structure
from kgrag.retrieve.tuning import CROSS_SCRIPT, RANKING
from kgrag.retrieve.types import SUFFIX, PathRank, PathResult, Query
from kgrag.text.scripts import is_mainly_non_latin

# A list that is another reading of a path votes as that path, once per chunk (its better rank):
# the keyword search of the question's translation is the keyword path's reading of the passages
# in the other script, and a passage both readings find (the Latin names of a Chinese question
# matching an English page) is not counted twice.
VOTES_WITH = {"translated": "bm25"}


def voter(name: str) -> str:
    """The path a list votes as: its own name, or the path it is another reading of, with the
    list's suffix kept (a rewrite's "translated@mq1" votes as "bm25@mq1", not as "bm25")."""
    base, at, suffix = name.partition(SUFFIX)
    return VOTES_WITH.get(base, base) + at + suffix


def rrf(
    results: Sequence[PathResult], weights: Mapping[str, float], k: int,
    imputed: Mapping[str, float] | None = None,
) -> list[tuple[str, float, dict[str, PathRank]]]:
    """(chunk id, fused score, {path: rank and score}) best first; ties broken by the best
    single-path rank, then by id, so the order is deterministic. ``imputed``: votes added for
    chunks that paths blind to them could not give (``imputed_votes``). A list that is another
    reading of a path votes as that path, once per chunk (``VOTES_WITH``)."""
    fused: dict[str, float] = dict(imputed or {})
    votes: dict[tuple[str, str], float] = {}  # (voter, chunk id) → its best vote
    ranks: dict[str, dict[str, PathRank]] = {}
    for result in results:
        weight = weights.get(result.name, 1.0)
        votes_as = voter(result.name)
        for rank, hit in enumerate(result.hits, start=1):
            vote = weight / (k + rank)
            before = votes.get((votes_as, hit.id), 0.0)
            if vote > before:
                fused[hit.id] = fused.get(hit.id, 0.0) + vote - before
                votes[(votes_as, hit.id)] = vote
            ranks.setdefault(hit.id, {})[result.name] = PathRank(rank, hit.score, hit.calibrated)
    return _ordered({cid: v for cid, v in fused.items() if cid in ranks}, ranks)


def imputed_votes(results: Sequence[PathResult], weights: Mapping[str, float], k: int, question_non_latin: bool,
                  non_latin: Mapping[str, bool], gap: float) -> dict[str, float]:
    """Votes for the chunks written in another script than the question that the keyword and
    graph paths did not rank: those paths match words and names as written, so a Chinese
    passage is out of an English question's sight for them, not ranked low. Each such path
    votes for such a chunk what it would give at the chunk's dense rank (the dense path's
    multilingual space is the one that compares across scripts), when its dense similarity is
    within ``gap`` of the best one of the question's own script (or above): an own-language
    question keeps its own-language answer first. Without this, a question's own-language
    distractors that two blind paths agree on outvote its answer in the other language
    (docs/decisions.md, "Questions across languages"). ``non_latin``: chunk id → written mainly outside the
    Latin script, for the dense path's chunks."""
    dense = next((r for r in results if r.name == "dense"), None)
    if dense is None:
        return {}
    own = [h.score for h in dense.hits if non_latin.get(h.id, question_non_latin) == question_non_latin]
    floor = (max(own) if own else float("-inf")) - gap
    # A keyword list reads the other script's passages through its question's translation when
    # it has one (``TranslatedKeywordPath``; "translated@mq1" for the rewrite "bm25@mq1"): it is
    # blind to them no more.
    read = {voter(r.name) for r in results if r.path in VOTES_WITH}
    blind = [r for r in results if r.path == "graph" or (r.path == "bm25" and r.name not in read)]
    seen = {r.name: {h.id for h in r.hits} for r in blind}
    out: dict[str, float] = {}
    for rank, hit in enumerate(dense.hits, start=1):
        if non_latin.get(hit.id, question_non_latin) == question_non_latin or hit.score < floor:
            continue
        for r in blind:
            if hit.id not in seen[r.name]:
                out[hit.id] = out.get(hit.id, 0.0) + weights.get(r.name, 1.0) / (k + rank)
    return out


def _ordered(fused: dict[str, float], ranks: dict[str, dict[str, PathRank]]) -> list[tuple[str, float, dict[str, PathRank]]]:
    """Best fused score first; ties: the best single-path rank, then the id (deterministic)."""
    order = sorted(fused, key=lambda cid: (-fused[cid], min(r.rank for r in ranks[cid].values()), cid))
    return [(cid, fused[cid], ranks[cid]) for cid in order]


def score_fusion(
    results: Sequence[PathResult], weights: Mapping[str, float], k: int
) -> list[tuple[str, float, dict[str, PathRank]]]:
    """Weighted sum of min–max normalized scores (each path's list scaled to 0..1); unlike
    RRF it keeps the size of a path's lead (a BM25 hit far ahead of the rest stays ahead).
    RRF is the default: with the graph path it ranks better (docs/decisions.md, "Reciprocal
    rank fusion, not score fusion")."""
    fused: dict[str, float] = {}
    ranks: dict[str, dict[str, PathRank]] = {}
    for result in results:
        if not result.hits:
            continue
        weight = weights.get(result.name, 1.0)
        top, low = result.hits[0].score, result.hits[-1].score
        span = (top - low) or 1.0
        for rank, hit in enumerate(result.hits, start=1):
            fused[hit.id] = fused.get(hit.id, 0.0) + weight * (hit.score - low) / span
            ranks.setdefault(hit.id, {})[result.name] = PathRank(rank, hit.score, hit.calibrated)
    return _ordered(fused, ranks)


def keep_path_heads(
    fused: list[tuple[str, float, dict[str, PathRank]]], results: Sequence[PathResult], slot: int
) -> list[tuple[str, float, dict[str, PathRank]]]:
    """Move each path's first hit up to place ``slot`` (1-based) when fusion put it lower.

    RRF rewards agreement: a passage two paths rank 2nd–3rd beats one a single path is sure of
    (rank 1) and another never saw — and a multi-hop question's second passage is often seen by
    one path only. The first place cannot change (only places from ``slot`` down move); the run
    is in docs/decisions.md, "Three paths fused, with the evidence set"."""
    if slot < 1:
        return fused
    fused = list(fused)
    for result in results:
        if not result.hits:
            continue
        top = result.hits[0].id
        pos = next((i for i, item in enumerate(fused) if item[0] == top), None)
        if pos is not None and pos >= slot:
            fused.insert(slot - 1, fused.pop(pos))
    return fused


@dataclass
class Fused:
    """One fused candidate: its score and per-path ranks, and the rule that put it where it is
    (``{"rule": "fusion"}``, ``{"rule": "path_head", "path": ...}``, or an evidence-set
    placement: ``{"rule": "entity_page" | "bridge", "entity", "surface", "page_of", "hops"}``)."""

    chunk_id: str
    score: float
    ranks: dict[str, PathRank]
    placed_by: dict[str, object] = field(default_factory=lambda: {"rule": "fusion"})


@dataclass
class Fusion:
    """The fused order, the weight each path voted with and why any differs from the setting,
    and the evidence set that was placed."""

    items: list[Fused]
    weights: dict[str, float]
    reasons: dict[str, str] = field(default_factory=dict)
    evidence: list[Placement] = field(default_factory=list)


def fuse(results: Sequence[PathResult], query: Query, settings: RetrievalSettings,
         names_in: Callable[[list[str]], dict[str, list[str]]] | None = None,
         scripts_of: Callable[[list[str]], dict[str, bool]] | None = None) -> Fusion:
    """The fusion stage: per-question path weights → weighted RRF (or score fusion) → each
    trusted path's first hit kept in the head → the evidence set placed after the first
    ``evidence_set_after`` fused places. ``names_in`` (chunk ids → entity keys mentioned, e.g.
    ``GraphStore.chunk_entities``) lets bridges follow what an entity's page names.
    ``scripts_of`` (chunk ids → written mainly outside the Latin script; given when the dense
    path compares across scripts) imputes the blind paths' votes for chunks in the question's
    other script (``imputed_votes``). Each rule is measured in its own docstring."""
    weights, reasons = path_weights(results, settings)
    by_name = {r.name: r for r in results}
    if settings.fusion == "score":
        fused = score_fusion(results, weights, settings.rrf_k)
    else:
        imputed = None
        dense = by_name.get("dense")
        if scripts_of is not None and dense is not None and dense.hits:
            imputed = imputed_votes(results, weights, settings.rrf_k, is_mainly_non_latin(query.question),
                                    scripts_of([h.id for h in dense.hits]), CROSS_SCRIPT.imputed_gap)
        fused = rrf(results, weights, settings.rrf_k, imputed)
    trusted = [r for r in results if r.name not in reasons and r.keep_head]
    headed = keep_path_heads(fused, trusted, settings.keep_path_top)
    moved = _moved_heads(fused, trusted, settings.keep_path_top)
    readings = [r for r in results if r.name not in reasons and reading_holds_head(r, by_name)]
    if readings:  # the translation's first hit: a place in the first five (``reading_holds_head``)
        place = CROSS_SCRIPT.translated_head_place
        moved |= _moved_heads(headed, readings, place)
        headed = keep_path_heads(headed, readings, place)
    items = [Fused(cid, score, ranks, {"rule": "path_head", "path": moved[cid]} if cid in moved else {"rule": "fusion"})
             for cid, score, ranks in headed]
    graph = by_name.get("graph")
    placements: list[Placement] = []
    if settings.evidence_set and graph is not None and graph.hits:
        placements = evidence_set(query, graph, names_in)[: settings.evidence_set_max]
        items = _place(items, placements, settings.evidence_set_after)
    return Fusion(items, weights, reasons, placements)


def reading_holds_head(result: PathResult, by_name: Mapping[str, PathResult]) -> bool:
    """Whether the question's translation's keyword list (``VOTES_WITH``) keeps its first hit at
    place ``CROSS_SCRIPT.translated_head_place`` or above: when that hit matches the translated
    words at least ``CROSS_SCRIPT.translated_head_share`` as strongly as the best passage
    matches the question's own words (both are BM25 scores over one index). Its own vote is the
    keyword path's second reading, so an answer written only in the other language — found
    first by the translation, seen by no other path but the dense one — is outvoted by
    own-language passages that two or three paths half-match; a translation that matches a few
    words of a stray other-language page (an English corpus's Chinese pages) stays a vote. The
    place is fifth, not the trusted paths' third: the answerer and the gate read the first
    three, and one translated word ("mistaken" → 错误) can match a page about something else."""
    if result.name not in VOTES_WITH or not result.hits:
        return False
    own = by_name.get(VOTES_WITH[result.name])
    best_own = own.hits[0].score if own is not None and own.hits else 0.0
    return result.hits[0].score >= CROSS_SCRIPT.translated_head_share * best_own


def path_weights(results: Sequence[PathResult], settings: RetrievalSettings) -> tuple[dict[str, float], dict[str, str]]:
    """The configured weights, with the graph's scaled by ``unstructured_graph_weight`` when it
    votes with others and none of its top hits is the page of an entity it started from
    (``graph_has_structure``): its hits then merely mention the question's names, and at full
    weight they push BM25's better ones down (docs/decisions.md, "The graph's weight without
    entity pages")."""
    # A later round's list ("graph@2") votes with its path's weight.
    weights = {r.name: settings.weights.get(r.path, 1.0) for r in results}
    reasons: dict[str, str] = {}
    graph = next((r for r in results if r.name == "graph"), None)
    if graph is not None and graph.hits and len(results) > 1 \
            and not graph_has_structure(graph, RANKING.structure_top):
        weights["graph"] *= settings.unstructured_graph_weight
        reasons["graph"] = (f"none of its top {RANKING.structure_top} hits is the page of a question or feedback "
                            f"entity: weight × {settings.unstructured_graph_weight}, no head place")
        for later in (r.name for r in results if r.name.startswith("graph@")):  # iteration rounds' walks
            weights[later] *= settings.unstructured_graph_weight
            reasons[later] = reasons["graph"]
    return weights, reasons


def _moved_heads(fused: list[tuple[str, float, dict[str, PathRank]]], results: Sequence[PathResult],
                 slot: int) -> dict[str, str]:
    """chunk id → the path whose first hit it is, for the heads ``keep_path_heads`` moves up."""
    if slot < 1:
        return {}
    position = {item[0]: i for i, item in enumerate(fused)}
    return {r.hits[0].id: r.name for r in results
            if r.hits and position.get(r.hits[0].id, -1) >= slot}


def _place(items: list[Fused], placements: list[Placement], after: int) -> list[Fused]:
    """The first ``after`` items, the evidence set (in its order), then the remaining items.
    A placed passage no path ranked (a bridge's page the graph reached but ranked past its
    candidates) enters with a zero fused score and the graph's route as its only evidence."""
    by_id = {item.chunk_id: item for item in items}
    head = items[:after]
    shown = {item.chunk_id for item in head}
    placed: list[Fused] = []
    for p in placements:
        if p.chunk_id in shown:
            continue
        shown.add(p.chunk_id)
        item = by_id.get(p.chunk_id) or Fused(p.chunk_id, 0.0, {})
        item.placed_by = {"rule": p.rule, **p.trace()}
        placed.append(item)
    return head + placed + [item for item in items[after:] if item.chunk_id not in shown]
