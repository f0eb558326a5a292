"""Runs a benchmark through the served retrieval pipeline, mode by mode, and scores it.

Every query goes through ``Retriever.retrieve`` — what ``/v1/retrieve`` calls — once per
ablation mode, on one knowledge base. Hits are chunks; metrics are over passages (corpus ids),
so a ranked list is the distinct ``chunk.doc_id``s in hit order. Several chunks of one passage
can fill the top of the list, so the retriever is asked for ``CHUNKS_PER_PASSAGE`` times as
many chunks as passages are scored; the chunk order does not depend on how many are asked for
(fusion, rerank pool and dedupe are the same), so the first ``retrieval.top_k`` chunks are
exactly what the server would return, and what answer generation is given.

From Python, a tuning script keeps one ``Components`` (models loaded, base ingested) and calls
``run_eval`` per variant, e.g. after changing ``components.retriever.settings`` — the
knowledge base is reused as long as ingestion settings stay the same.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from kgrag import heap
from kgrag.asking import Asking, AskRequest
from kgrag.errors import InputError
from kgrag.eval import metrics as m
from kgrag.eval.answers import answer_contains, answer_exact, answer_leads, check_citations
from kgrag.eval.data import EvalQuery, check_gold_in_corpus, check_gold_outside_corpus, load_corpus, load_queries
from kgrag.eval.kb import ensure_kb, served_knowledge_base
from kgrag.eval.negatives import summarize as summarize_negatives
from kgrag.eval.negatives import summarize_off_topic, without_gold
from kgrag.eval.provenance import provenance
from kgrag.eval.report import AnswerSummary, EvalReport, ModeSummary
from kgrag.retrieve.pipeline import RetrievalError
from kgrag.retrieve.types import PATHS, RetrievalResult

DEFAULT_KS = (1, 2, 5, 10)
DEFAULT_MODES = ("bm25", "dense", "graph", "bm25+dense", "bm25+dense+graph")
ALL_GOLD_K = 5
NDCG_K = 10
CHUNKS_PER_PASSAGE = 3
MAX_CHUNKS = 100  # the retrieval API's top_k ceiling


class EvalConfigError(InputError):
    """Evaluation options that cannot be honoured (unknown mode, rerank without a reranker)."""


# Mode switches besides the paths, in the order a mode's name writes them.
ITERATE = {"iter": "entities", "iter-llm": "llm"}
# LLM query rewrites (kgrag.retrieve.llm_rewrites), written after the paths and '+rerank'.
REWRITE_MODES = {"hyde": "hyde", "multiquery": "multi_query", "decompose": "decompose", "stepback": "step_back"}
# A mode naming switches only ("+hyde") runs them on the full pipeline.
FULL_PIPELINE = ("bm25", "dense", "graph")


@dataclass(frozen=True)
class Mode:
    """A row of the ablation. ``iterate``: the retrieve–reason driver ("entities", "llm"), None:
    one round — a mode without ``+iter`` never iterates, whatever ``retrieval.iterate`` says,
    so each row measures exactly what it names. ``rewrites``: the LLM query rewrites it runs
    (none unless named, whatever the settings switch on)."""

    name: str
    paths: tuple[str, ...]
    rerank: bool = False
    iterate: str | None = None
    rewrites: tuple[str, ...] = ()


def parse_mode(spec: str) -> Mode:
    """``"bm25+dense"``, ``"bm25+dense+graph+rerank"``, ``"bm25+dense+graph+iter"``,
    ``"bm25+dense+graph+hyde+decompose"``; ``"+hyde"`` (switches only) is
    ``"bm25+dense+graph+hyde"``. The name keeps the paths' order as written."""
    parts = [p.strip().lower() for p in spec.split("+") if p.strip()]
    rerank = "rerank" in parts
    drivers = [ITERATE[p] for p in parts if p in ITERATE]
    rewrites = tuple(v for k, v in REWRITE_MODES.items() if k in parts)
    switches = {"rerank", *ITERATE, *REWRITE_MODES}
    paths = tuple(dict.fromkeys(p for p in parts if p not in switches))
    if not paths and parts and set(parts) <= switches:
        paths = FULL_PIPELINE
    unknown = [p for p in paths if p not in PATHS]
    if unknown or not paths or len(drivers) > 1:
        raise EvalConfigError(
            f"mode {spec!r}: " + (f"unknown path(s) {unknown}" if unknown else
                                  "names no retrieval path" if not paths else "names two iteration drivers")
            + f"; paths are {'/'.join(PATHS)} joined by '+', optionally '+rerank', LLM rewrites "
              f"{['+' + k for k in REWRITE_MODES]} and one of {['+' + k for k in ITERATE]}"
        )
    iterate = drivers[0] if drivers else None
    if iterate and "graph" not in paths:
        raise EvalConfigError(f"mode {spec!r}: iteration seeds the graph path; add 'graph'")
    suffix = ("+rerank" if rerank else "") + "".join("+" + k for k, v in REWRITE_MODES.items() if v in rewrites)
    suffix += next(("+" + k for k, v in ITERATE.items() if v == iterate), "")
    return Mode("+".join(paths) + suffix, paths, rerank, iterate, rewrites)


# The mode name that stands for what ``/v1/query`` runs with this configuration (``served_mode``).
SERVED = "served"


def served_mode(*, reranker: bool, iterate: bool) -> str:
    """The mode ``/v1/query`` runs: every path, the reranker when one is configured (a request's
    ``rerank`` defaults to true), retrieve–reason rounds when ``retrieval.iterate`` is on."""
    return "bm25+dense+graph" + ("+rerank" if reranker else "") + ("+iter" if iterate else "")


def parse_modes(specs: str | Sequence[str] | None, *, reranker: bool, iterate: bool = False) -> list[Mode]:
    """Comma-separated or a list (``served``: the served mode, ``served_mode``); None: the
    standard ablation, plus the reranked full pipeline when a reranker is configured, and the
    iterating one when ``iterate`` (``retrieval.iterate``: the served default)."""
    if specs is None:
        specs = list(DEFAULT_MODES) + (["bm25+dense+graph+rerank"] if reranker else [])
        if iterate:
            specs.append(served_mode(reranker=reranker, iterate=True))
    elif isinstance(specs, str):
        specs = [s for s in specs.split(",") if s.strip()]
    specs = [served_mode(reranker=reranker, iterate=iterate) if s.strip().lower() == SERVED else s for s in specs]
    modes = list({mode.name: mode for mode in map(parse_mode, specs)}.values())
    if not modes:
        raise EvalConfigError("no retrieval mode given")
    if any(mode.rerank for mode in modes) and not reranker:
        raise EvalConfigError("a '+rerank' mode needs a reranker: set retrieval.reranker_path")
    return modes


def run_eval(
    components,
    corpus_path: str | Path | None,
    queries_path: str | Path,
    *,
    modes: str | Sequence[str] | None = None,
    limit: int | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    top_k: int | None = None,
    answers: bool | None = None,
    answer_mode: str | None = None,
    progress: bool = False,
    history: bool = True,
    negatives: bool = False,
    off_topic: bool = False,
) -> EvalReport:
    """Score ``queries_path`` against ``corpus_path`` with the components' pipeline.

    ``components.settings.data_dir`` is the knowledge base: reused when its manifest matches the
    corpus and ingestion settings, else built. ``corpus_path`` None: the knowledge base as it is
    (nothing ingested; gold ids name its documents). ``top_k``: passages ranked per query (default:
    the largest of ``ks`` and 10). ``answers``: score generated answers too (default: when an
    LLM is configured; the extractive answerer otherwise on request). ``answer_mode``: the mode
    whose hits generation reads (default: the last one, the fullest pipeline). ``history``: ask
    each question after the conversation in its ``meta.context`` (a follow-up is scored as part
    of its thread); False asks every question on its own. ``negatives``: also judge each
    question with its gold passages taken out of its hits (``kgrag.eval.negatives``): the
    abstention gate, and the answer when answers are scored, should abstain there.
    ``off_topic``: the questions are another set's, which this knowledge base does not answer
    (their gold ids name no document of it): only abstention is scored (``OffTopicSummary``),
    and every question should be declined.
    """
    started = time.perf_counter()
    measured_by = provenance(components.settings)
    ks = sorted(set(ks))
    if not ks or ks[0] < 1:
        raise EvalConfigError(f"ks must be positive integers, got {list(ks)}")
    depth = top_k or max(ks[-1], NDCG_K)
    if depth < max(ks[-1], NDCG_K):
        raise EvalConfigError(f"top_k {depth} is below the largest k ({ks[-1]}) or NDCG's {NDCG_K}")
    chunk_top_k = min(MAX_CHUNKS, CHUNKS_PER_PASSAGE * depth)
    mode_list = parse_modes(modes, reranker=components.reranker is not None,
                            iterate=components.settings.retrieval.iterate)
    with_answers = bool(components.settings.llm.model) if answers is None else answers
    gen_mode = parse_mode(answer_mode) if answer_mode else mode_list[-1]
    if (with_answers or negatives) and gen_mode.name not in {mode.name for mode in mode_list}:
        raise EvalConfigError(f"answer mode {gen_mode.name!r} is not one of the evaluated modes")

    queries = load_queries(Path(queries_path), limit)
    if off_topic and negatives:
        raise EvalConfigError("off-topic questions have no gold passages here to take out: drop --negatives")
    if corpus_path is None:
        corpus, ingest = served_knowledge_base(components)
    else:
        corpus = load_corpus(Path(corpus_path))
    (check_gold_outside_corpus if off_topic else check_gold_in_corpus)(queries, corpus)
    if corpus_path is not None:
        ingest = ensure_kb(components, corpus, progress=progress)

    retriever = components.retriever
    asking = components.asking  # what the server answers through
    generator = components.generator if with_answers else None
    served_k = components.settings.retrieval.top_k
    _warm_up(retriever, queries[0].question, mode_list, chunk_top_k)
    heap.settle()  # as a server does: the collector's full passes would time the models
    per_query: list[dict[str, Any]] = []
    loop_started = time.perf_counter()
    bar = tqdm(total=len(queries) * len(mode_list), desc=f"eval {corpus.name}", unit="retrieval",
               disable=not progress, leave=False)
    for q in queries:
        record: dict[str, Any] = {"id": q.id, "question": q.question, "gold_ids": list(q.gold_ids),
                                  "answers": list(q.answers), "linked": None, "modes": {},
                                  "category": q.meta.get("category"), "type": question_type(q),
                                  "history": [t.question for t in q.history]}
        for mode in mode_list:
            ask = AskRequest(q.question, modes=mode.paths, rerank=mode.rerank,
                             history=tuple(q.history) if history else (), rewrites=mode.rewrites,
                             today=q.day, **_iteration(components, mode))
            try:
                result = asking.retrieve(ask, top_k=chunk_top_k)
            except RetrievalError as e:
                raise RetrievalError(f"query {q.id!r}, mode {mode.name}: {e}") from e
            record["modes"][mode.name] = _score(q, result, depth, ks, corpus.ids)
            if record["linked"] is None and ("bm25" in mode.paths or "graph" in mode.paths):
                record["linked"] = [{"surface": le.surface, "name": le.name, "method": le.method}
                                    for le in result.query.linked]
            if generator is not None and mode.name == gen_mode.name:
                record["answer"] = _answer(asking, ask, q, result, served_k)
            if negatives and mode.name == gen_mode.name:
                record["negative"] = without_gold(generator, q, result, retriever, served_k)
            bar.update()
        per_query.append(record)
    bar.close()
    loop_seconds = time.perf_counter() - loop_started

    shown = {pid for r in per_query for s in r["modes"].values() for pid in s["ranked"]}
    shown |= {g for q in queries for g in q.gold_ids}
    return EvalReport(
        dataset=corpus.name,
        corpus=str(corpus.path),
        queries_file=str(queries_path),
        queries=len(queries),
        ks=ks,
        depth=depth,
        chunk_top_k=chunk_top_k,
        modes=[_summarize(mode, per_query, ks, min(depth, len(corpus.titles))) for mode in mode_list],
        answers=_summarize_answers(gen_mode.name, per_query, components.settings.llm.model) if generator else None,
        negatives=summarize_negatives(gen_mode.name, per_query) if negatives else None,
        off_topic=summarize_off_topic(gen_mode.name, per_query, str(queries_path)) if off_topic else None,
        ingest=ingest,
        retrieval_settings=retriever.settings.model_dump(mode="json"),
        per_query=per_query,
        titles={pid: corpus.titles[pid] for pid in sorted(shown) if pid in corpus.titles},
        wall_seconds=round(time.perf_counter() - started, 2),
        query_seconds=round(loop_seconds, 2),
        provenance=measured_by,
    )


def question_type(q: EvalQuery) -> str | None:
    """The set's own question kind, ``meta.type`` (2Wiki's compositional / comparison /
    bridge_comparison / inference, HotpotQA's bridge / comparison), which the report breaks
    recall and AllGold@5 down by."""
    kind = q.meta.get("type")
    return str(kind) if kind else None


def _iteration(components, mode: Mode) -> dict[str, Any]:
    """The request's iteration options for ``mode``: off, or on with the mode's driver."""
    if mode.rewrites and getattr(components, "query_llm", None) is None:
        raise EvalConfigError(f"mode {mode.name}: LLM query rewriting needs an LLM: set llm.model")
    if mode.iterate is None:
        return {"iterate": False}
    if mode.iterate == "llm":
        if getattr(components, "llm_driver", None) is None:
            raise EvalConfigError(f"mode {mode.name}: '+iter-llm' needs an LLM: set llm.model")
        return {"iterate": True, "iterate_driver": "llm"}
    return {"iterate": True}


def _warm_up(retriever, question: str, modes: list[Mode], top_k: int) -> None:
    """One untimed retrieval through every path (and the reranker): first calls load lazy
    model parts and warm caches, which would otherwise land in the first query's latency."""
    paths = tuple(dict.fromkeys(p for mode in modes for p in mode.paths))
    retriever.retrieve(question, top_k=top_k, modes=paths, rerank=any(mode.rerank for mode in modes))


def _score(q: EvalQuery, result: RetrievalResult, depth: int, ks: list[int], corpus_ids: set[str]) -> dict[str, Any]:
    docs = m.distinct(h.chunk.doc_id for h in result.hits)
    ranked = docs[:depth]
    ranks = m.gold_ranks(docs, q.gold_ids)  # beyond depth too: "found at 14" is worth knowing
    gold_paths: dict[str, dict[str, int]] = {}
    for hit in result.hits:  # per gold passage, its best chunk's rank in each path
        if hit.chunk.doc_id in ranks and hit.chunk.doc_id not in gold_paths:
            gold_paths[hit.chunk.doc_id] = {name: pr.rank for name, pr in hit.paths.items()}
    return {
        "ranked": ranked,
        "gold_ranks": ranks,
        "gold_paths": gold_paths,
        "missed": {str(k): [g for g, r in ranks.items() if r is None or r > k] for k in ks},
        "recall": {str(k): m.recall_at_k(ranked, q.gold_ids, k) for k in ks},
        "all_gold": m.all_gold_at_k(ranked, q.gold_ids, ALL_GOLD_K),
        "ndcg": m.ndcg_at_k(ranked, q.gold_ids, NDCG_K),
        "rr": m.reciprocal_rank(ranked, q.gold_ids),
        "passages": len(docs),
        "chunks": len(result.hits),
        "foreign": sum(1 for d in docs if d not in corpus_ids),
        "reranked": result.reranker is not None,
        "below_threshold": result.below_threshold,
        "gate": result.gate,
        "timings_ms": dict(result.timings_ms),
        "rounds": len(result.iteration.rounds) if result.iteration else 1,
        "llm_calls": result.llm_calls,
        "rewriting": [r.trace() for r in result.rewriting] or None,
        "iteration": result.iteration.trace() if result.iteration else None,
    }


def _answer(asking: Asking, ask: AskRequest, q: EvalQuery, result: RetrievalResult, served_k: int) -> dict[str, Any]:
    hits = result.hits[:served_k]
    # As the server answers (the follow-up completed, a positional one read as such, on the
    # question's day), from the hits it would serve.
    answer = asking.answer(ask, replace(result, hits=hits))
    checks = check_citations(answer, hits, q.gold_ids)
    return {
        "text": answer.text,
        "mode": answer.mode,
        "abstained": answer.abstained,
        "exact": (not answer.abstained) and answer_exact(answer.text, q.answers),
        "contains": (not answer.abstained) and answer_contains(answer.text, q.answers),
        "leads": (not answer.abstained) and answer_leads(answer.text, q.answers),
        "citations": [{"n": c.n, "chunk_id": c.chunk_id, "doc_id": c.doc_id, "retrieved": c.retrieved,
                       "supported": c.supported, "gold": c.gold} for c in checks],
        "fallback_reason": answer.fallback_reason,
        "ms": answer.timings_ms.get("generate"),
    }


def _summarize(mode: Mode, per_query: list[dict[str, Any]], ks: list[int], full_list: int) -> ModeSummary:
    """``full_list``: passages a complete ranking holds (the depth, or the whole corpus when smaller)."""
    rows = [r["modes"][mode.name] for r in per_query]
    stages: dict[str, list[float]] = {}
    for row in rows:
        for stage, ms in row["timings_ms"].items():
            stages.setdefault(stage, []).append(ms)
    return ModeSummary(
        mode=mode.name,
        paths=list(mode.paths),
        rerank=mode.rerank,
        queries=len(rows),
        recall={str(k): m.mean([r["recall"][str(k)] for r in rows]) for k in ks},
        all_gold_at_5=m.mean([r["all_gold"] for r in rows]),
        ndcg_at_10=m.mean([r["ndcg"] for r in rows]),
        mrr=m.mean([r["rr"] for r in rows]),
        latency_ms={stage: m.percentiles(values) for stage, values in stages.items()},
        short_lists=sum(1 for r in rows if r["passages"] < full_list),
        below_threshold=sum(1 for r in rows if r["below_threshold"]),
        foreign_hits=sum(r["foreign"] for r in rows),
        rounds=m.mean([float(r["rounds"]) for r in rows]),
        max_rounds=max((r["rounds"] for r in rows), default=1),
        llm_calls=m.mean([float(r["llm_calls"]) for r in rows]),
        rewrite_fallbacks=sum(1 for r in rows for w in (r.get("rewriting") or []) if w["fallback_reason"]),
    )


def _summarize_answers(mode_name: str, per_query: list[dict[str, Any]], model: str | None) -> AnswerSummary:
    rows = [r["answer"] for r in per_query]
    citations = [c for a in rows for c in a["citations"]]
    n = len(rows)
    return AnswerSummary(
        mode=mode_name,
        model=model,
        queries=n,
        contains=m.mean([float(a["contains"]) for a in rows]),
        leads=m.mean([float(a.get("leads", False)) for a in rows]),
        exact=m.mean([float(a["exact"]) for a in rows]),
        abstained=m.mean([float(a["abstained"]) for a in rows]),
        citations=len(citations),
        citation_precision=m.mean([float(c["retrieved"] and c["supported"]) for c in citations]),
        citation_gold=m.mean([float(c["gold"]) for c in citations]),
        answer_modes={k: sum(1 for a in rows if a["mode"] == k) for k in sorted({a["mode"] for a in rows})},
        fallbacks=sum(1 for a in rows if a["fallback_reason"]),
        latency_ms=m.percentiles([a["ms"] for a in rows if a["ms"] is not None]),
    )
