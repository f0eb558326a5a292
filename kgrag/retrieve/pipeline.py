"""The retrieval pipeline: link → three paths in parallel → fuse → rerank → gate → dedupe →
parent expansion. The server's ``/v1/retrieve`` and ``/v1/query``, the CLI and the eval
harness all call ``Retriever.retrieve``, so what is measured is what is served.
"""

from __future__ import annotations

import copy
import datetime as dt
import os
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor

from kgrag.config import RetrievalSettings
from kgrag.errors import InputError
from kgrag.models.base import CorpusEmbedder, Embedder, Reranker, SpaceQuery
from kgrag.retrieve.abstain import assess, gate_settings
from kgrag.retrieve.acronyms import letter_parts
from kgrag.retrieve.cited_neighbour import open_with_cited
from kgrag.retrieve.constraints import CatalogCache, merge_filters
from kgrag.retrieve.cross_script import lead_with_tied, tie_names
from kgrag.retrieve.followup import complete
from kgrag.retrieve.fusion import Fusion, fuse
from kgrag.retrieve.iterate import EntityFeedbackDriver, IterationDriver, RoundPlan, run_rounds
from kgrag.retrieve.linking import EntityLinker
from kgrag.retrieve.llm_rewrites import REWRITES, QueryLLM, parse_rewrites, run_rewrites
from kgrag.retrieve.paths import DensePath, GraphWalkPath, KeywordPath, TranslatedKeywordPath, other_language_held
from kgrag.retrieve.postprocess import drop_overlapping, expand_parents, fused_hits
from kgrag.retrieve.recency import Recency, prefer_recent
from kgrag.retrieve.reranking import rerank as rerank_hits
from kgrag.retrieve.tuning import RANKING
from kgrag.retrieve.types import (
    PATHS,
    AcrossMeaning,
    Completion,
    Exclusion,
    Hit,
    Iteration,
    LinkedEntity,
    NameTies,
    PathResult,
    Query,
    RetrievalPath,
    RetrievalResult,
    Rewriting,
    Understanding,
)
from kgrag.retrieve.understand import small_talk_reply, split_topic, understand
from kgrag.retrieve.word_forms import HitText, name_found, question_names
from kgrag.stores.base import ChunkIndex, GraphReader
from kgrag.stores.filters import SearchFilter
from kgrag.text.scripts import has_han, is_mainly_non_latin
from kgrag.types import GraphPath, Turn


class RetrievalError(InputError):
    """A retrieval request that cannot be served as asked (bad mode, empty question). Bad
    filters never get here: ``SearchFilter.parse`` refuses them at the edge. A store that fails
    mid-search raises its own ``StoreError``: that is the server's fault, not the question's."""


def dense_path(chunk_index: ChunkIndex, embedder: Embedder) -> DensePath:
    if isinstance(embedder, CorpusEmbedder):
        return DensePath(chunk_index, embedder.query_vectors, spaces=True, scripts_of=_scripts_reader(chunk_index))
    return DensePath(chunk_index, lambda q: [SpaceQuery(embedder.embed_queries([q])[0])])


def _scripts_reader(chunk_index: ChunkIndex) -> Callable[[list[str]], dict[str, bool]]:
    """Chunk ids → written mainly outside the Latin script (read from their text)."""
    return lambda ids: {c.id: is_mainly_non_latin(c.text) for c in chunk_index.get(ids)}


class Retriever:
    def __init__(
        self,
        settings: RetrievalSettings,
        chunk_index: ChunkIndex,
        graph: GraphReader,
        embedder: Embedder,
        reranker: Reranker | None = None,
        linker: EntityLinker | None = None,
        rewriter: Callable[[Completion], str] | None = None,
        driver: IterationDriver | None = None,
        query_llm: QueryLLM | None = None,
        across_meaning: AcrossMeaning | None = None,
        reranker_failure: str | None = None,
    ):
        """``rewriter``: turns a follow-up into a standalone question (the LLM, when one is
        configured: ``kgrag.retrieve.followup_llm``); any exception it raises keeps the rule's
        completion, with the reason in the trace. ``driver``: plans iterative rounds (default:
        the LLM-free ``EntityFeedbackDriver``). ``query_llm``: rewrites questions when a rewrite
        is switched on (``kgrag.retrieve.llm_rewrites``; None: a switched-on rewrite adds nothing and
        the trace says no LLM is configured). ``across_meaning``: what the gate reads when a
        question's words cannot be found because the hits are written in another script (None:
        the dense similarity alone decides there). ``reranker_failure``: why the configured reranker
        could not be loaded (the fused order stands, and each reranked request's trace says so)."""
        self.settings = settings
        self.chunk_index = chunk_index
        self.graph = graph
        self.embedder = embedder
        self.reranker = reranker
        self.reranker_failure = reranker_failure
        self.linker = linker or EntityLinker(graph, settings.fuzzy_link_threshold)
        self.rewriter = rewriter
        self.query_llm = query_llm
        self.across_meaning = across_meaning
        self.entity_driver = EntityFeedbackDriver(
            graph.chunk_entities, lambda ids: [c.text for c in chunk_index.get(ids)], lambda: self.settings.iterate_hits,
            lambda: self.settings.iterate_max_seeds)
        self.driver: IterationDriver = driver or self.entity_driver
        self.graph_path = GraphWalkPath(
            graph, lambda: chunk_index.count(searchable_only=True), hops=settings.hops,
            read_chunks=lambda ids: {c.id: (c.title, c.text) for c in chunk_index.get(ids)},
        )
        self.paths: dict[str, RetrievalPath] = {
            "dense": dense_path(chunk_index, embedder),
            "bm25": KeywordPath(chunk_index),
            "graph": self.graph_path,
        }
        self.translated_path = TranslatedKeywordPath(chunk_index, lambda: self.settings.translate_words)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0
        # What the documents carry, for the question's constraints (kgrag.retrieve.constraints),
        # and the day relative dates ("最近一年") count from: tests replace it.
        self.facets = CatalogCache(chunk_index)
        self.today: Callable[[], dt.date] = lambda: dt.datetime.now(dt.UTC).date()

    @property
    def pool(self) -> ThreadPoolExecutor:
        """Paths wait on SQLite, numpy and torch, which release the GIL: threads overlap them.
        Created per process: gunicorn loads the app (and warms it up) before forking its worker,
        and threads do not survive a fork — a pool inherited from the parent never runs a task."""
        if self._pool is None or self._pool_pid != os.getpid():
            self._pool = ThreadPoolExecutor(max_workers=len(PATHS), thread_name_prefix="kgrag-path")
            self._pool_pid = os.getpid()
        return self._pool

    def close(self) -> None:
        if self._pool is not None and self._pool_pid == os.getpid():
            self._pool.shutdown(wait=False)

    def retrieve(
        self,
        question: str,
        *,
        top_k: int | None = None,
        filters: SearchFilter | None = None,
        modes: tuple[str, ...] | None = None,
        rerank: bool = True,
        history: Sequence[Turn] = (),
        iterate: bool | None = None,
        driver: IterationDriver | None = None,
        rewrites: Collection[str] | None = None,
        recency: Recency | None = None,
    ) -> RetrievalResult:
        """``history``: the conversation's earlier turns, oldest first. A follow-up question
        ("and the next one?") is completed from them before any path runs
        (``kgrag.retrieve.followup``); a standalone question is searched as written.
        ``iterate``: run retrieve–reason rounds after the first (``kgrag.retrieve.iterate``;
        None: ``settings.iterate``); they need the graph path. ``driver``: plans them instead of
        ``self.driver`` (the eval's ``+iter-llm``, a request naming the LLM driver).
        ``rewrites``: the LLM query rewrites to run (``kgrag.retrieve.llm_rewrites.REWRITES``; None:
        those the settings switch on). ``recency``: prefer newer documents (``kgrag.retrieve.recency``; None: the settings')."""
        s = self.settings
        t_start = time.perf_counter()
        timings: dict[str, float] = {}
        t = time.perf_counter()
        query, own_links = self.new_query(question, top_k=top_k, filters=filters, modes=modes, history=history)
        completing = _ms(t)
        question = query.question
        if query.understanding is not None and query.understanding.reply is not None:
            timings["total"] = _ms(t_start)  # small talk: answered without retrieval
            return RetrievalResult(query, [], None, timings)
        results = self.search_paths(query, timings, own_links=own_links)
        timings["link"] = round(timings["link"] + completing, 2)
        rewriting: list[Rewriting] = []
        if kinds := self._rewrites(rewrites):
            t = time.perf_counter()
            added, rewriting = run_rewrites(self.query_llm, kinds, query,
                                            lambda sub, paths: self.search_paths(sub), s.multi_query_n)
            results = [*results, *added]
            timings["rewrite"] = _ms(t)

        t = time.perf_counter()
        fusion = fuse(results, query, s, names_in=self.graph.chunk_entities, scripts_of=self._scripts_of())
        timings["fusion"] = _ms(t)
        iteration = None
        if (s.iterate if iterate is None else iterate) and "graph" in query.modes:
            t = time.perf_counter()
            results, fusion, iteration = self._iterate(driver or self.driver, query, results, fusion, t_start)
            timings["iterate"] = _ms(t)
        evidence: dict[str, list[GraphPath]] = {}
        for r in results:  # the first round's routes first
            if r.path == "graph":
                for cid, routes in r.evidence.items():
                    evidence.setdefault(cid, routes)

        t = time.perf_counter()
        pool_size = max(query.top_k, s.rerank_top) if (rerank and self.reranker) else query.top_k
        hits = fused_hits(fusion.items[: pool_size * 2], evidence, self.chunk_index.get, query.filters,
                          query.exclusion)
        if (recency := recency or self._default_recency()) is not None:
            hits = prefer_recent(hits, recency, self.today())
        timings["fetch"] = _ms(t)

        reranker_name, notes = None, []
        if rerank and self.reranker is not None and hits:
            t = time.perf_counter()
            reranked = rerank_hits(self.reranker, question, hits[: s.rerank_top], s.rerank_weight)
            hits = reranked.hits
            if reranked.scored:
                reranker_name = self.reranker.name
            if reranked.note:
                notes.append(reranked.note)
            timings["rerank"] = _ms(t)
        elif rerank and self.reranker_failure:
            notes.append(self.reranker_failure)

        if query.completion is not None and query.completion.anchor:  # "and the next one?"
            hits = open_with_cited(query.completion, hits, self.chunk_index.get, query.filters)
        hits = drop_overlapping(hits)[: max(query.top_k, RANKING.gate_depth)]
        if s.expand_parents:
            t = time.perf_counter()
            expand_parents(self.chunk_index, hits)
            timings["parents"] = _ms(t)
        t = time.perf_counter()
        ties = self._name_ties(query, hits[: RANKING.gate_depth])
        hits = lead_with_tied(hits, ties, RANKING.gate_depth)
        gate = assess(question, hits, query.linked, gate_settings(s), reranked=reranker_name is not None, ties=ties,
                      meaning=self.meaning_of(question, hits))
        timings["gate"] = _ms(t)
        below = gate.abstain
        if s.min_score is not None and reranker_name is not None:
            hits = [h for h in hits if h.rerank_score is None or h.rerank_score >= s.min_score]
        hits = hits[: query.top_k]
        timings["total"] = _ms(t_start)
        return RetrievalResult(query, hits, reranker_name, timings, below_threshold=below, gate=gate.to_dict(),
                               path_weights=fusion.weights, weight_reasons=fusion.reasons,
                               evidence_set=[p.chunk_id for p in fusion.evidence], iteration=iteration,
                               rewriting=rewriting, name_ties=ties, warnings=notes)

    def new_query(
        self, question: str, *, top_k: int | None = None, filters: SearchFilter | None = None,
        modes: tuple[str, ...] | None = None, history: Sequence[Turn] = (),
    ) -> tuple[Query, list | None]:
        """The checked question (a follow-up completed from ``history``) with the paths that will
        run for it, and the entities the question links on its own (None without history)."""
        question = question.strip()
        if not question:
            raise RetrievalError("question is empty")
        modes = tuple(modes or PATHS)
        unknown = [m for m in modes if m not in PATHS]
        if unknown:
            raise RetrievalError(f"unknown retrieval mode(s) {unknown}; known: {list(PATHS)}")
        if (reply := small_talk_reply(question)) is not None:  # no retrieval for "thanks!"
            said = Understanding(question, question, question, reply=reply, route="small_talk")
            return Query(question, top_k or self.settings.top_k, filters, modes, understanding=said), None
        completion, own_links = self._complete(question, history)
        if completion is not None:
            question = completion.question
        understanding = understand(question, self.facets, self.today())
        understanding.filters = merge_filters(filters, understanding.constraint_filter)
        query = Query(understanding.search_text, top_k or self.settings.top_k, understanding.filters, modes,
                      completion=completion, understanding=understanding)
        if understanding.search_text != question or understanding.keyword_text != question:
            own_links = None  # linked from the text as asked; link again from what is searched
        if understanding.exclusions:
            query.exclusion = self._exclusion(understanding.exclusions)
        if "dense" in modes and len(modes) > 1 and not self.embedder.multilingual and has_han(question):
            # An English-only embedder ranks Chinese text near randomly; its vote would only
            # push good keyword and graph hits down (docs/decisions.md, "The routed embedder").
            query.modes = tuple(m for m in modes if m != "dense")
            query.skipped["dense"] = f"embedder {self.embedder.name} is English-only and the question is not"
        return query, own_links

    def search_paths(self, query: Query, timings: dict[str, float] | None = None,
                     own_links: list | None = None) -> list[PathResult]:
        """Link the question and run ``query.modes``' paths (dense in parallel with linking,
        the graph after BM25 when it takes feedback from it); fills ``query.linked``,
        ``expansions`` and ``feedback`` and per-stage milliseconds into ``timings``.
        ``own_links``: what ``new_query`` linked, reused when the question was not a follow-up."""
        s = self.settings
        modes = query.modes
        timings = {} if timings is None else timings
        # Dense embedding does not need linking: start it first, link meanwhile.
        futures = {}
        if "dense" in modes:
            futures["dense"] = self.pool.submit(self.paths["dense"].search, query, s.candidates)
        t = time.perf_counter()
        parts: list[LinkedEntity] = []
        if "bm25" in modes or "graph" in modes:
            completion = query.completion
            reuse = own_links is not None and completion is not None and not completion.followup
            query.linked = own_links if reuse and own_links is not None else self.linker.link(query.keyword_text)
            if query.exclusion is not None:  # an excluded topic's entity is never a seed
                query.linked = [le for le in query.linked if le.key not in query.exclusion.entities]
            parts = letter_parts(query.keyword_text, query.linked, self.graph)  # "what does the 'I' stand for"
            query.expansions = [*self.linker.expansions(query.linked), *(p.name for p in parts)] \
                if "bm25" in modes else []
        if "bm25" in modes:  # BM25 needs the expansions only: it runs while the walk's seeds are found
            futures["bm25"] = self.pool.submit(self.paths["bm25"].search, query, s.candidates)
            if s.translate_words and other_language_held(query.keyword_text, self._languages()):
                futures["translated"] = self.pool.submit(self.translated_path.search, query, s.candidates)
        if "graph" in modes and s.described_entities:
            excluded = query.exclusion.entities if query.exclusion is not None else set()
            query.described = [le for le in [*parts, *self.linker.described(query.keyword_text, query.linked)]
                               if le.key not in excluded]
        timings["link"] = _ms(t)
        done: dict[str, PathResult] = {}
        if "graph" in modes:
            if s.feedback_chunks and "bm25" in modes:
                # The graph takes its feedback seeds from BM25's best hit, so it waits for BM25;
                # the walk from the question's own entities needs none and runs here meanwhile
                # (the walk holds the GIL, SQLite's FTS does not). Same result as one search.
                walked = self.graph_path.walk_question(query)
                query.feedback = self._feedback(query, futures["bm25"].result())
                graph = self.graph_path.search(query, s.candidates, walked)
                graph.ms = round(graph.ms + (walked.ms if walked is not None else 0.0), 2)
                done["graph"] = graph
            else:
                futures["graph"] = self.pool.submit(self.graph_path.search, query, s.candidates)
        results: list[PathResult] = [done[name] if name in done else futures[name].result() for name in modes]
        if "translated" in futures and (translated := futures["translated"].result()).hits:
            results.append(translated)
        results = self._exclude(query, results)
        for result in results:
            timings[result.name] = result.ms
        return results

    def _iterate(self, driver: IterationDriver, query: Query, results: list[PathResult], fusion: Fusion,
                 started: float) -> tuple[list[PathResult], Fusion, Iteration]:
        """Further rounds planned by ``driver`` (``kgrag.retrieve.iterate``)."""
        s = self.settings

        def search(round_query: Query, plan: RoundPlan, number: int) -> list[PathResult]:
            # The other paths run in the pool while the graph walks here: the walk holds the GIL,
            # the embedding and matrix product mostly do not (docs/decisions.md, "Query-time
            # reads").
            others = []
            if round_query.question != query.question:  # a driver that rewrites the question
                others = [(m, round_query) for m in ("bm25", "dense") if m in query.modes]
            elif plan.dense_text and "dense" in query.modes:
                dense_query = copy.copy(round_query)
                dense_query.question = plan.dense_text
                others = [("dense", dense_query)]
            futures = [self.pool.submit(self.paths[m].search, q, s.candidates) for m, q in others]
            # The round's question entities are the first round's: their walk is reused.
            walked = next((r.question_walk for r in results if r.name == "graph"), None)
            added = [self.graph_path.search(round_query, s.candidates, walked), *(f.result() for f in futures)]
            for r in added:
                r.tag(str(number))
            return self._exclude(query, added)

        def fuse_all(all_results: list[PathResult], q: Query) -> Fusion:
            return fuse(all_results, q, s, names_in=self.graph.chunk_entities, scripts_of=self._scripts_of())

        budget_ms = s.iterate_llm_ms if driver.name == "llm" else s.iterate_ms
        return run_rounds(driver, query, results, fusion, search, fuse_all,
                          max_rounds=s.iterate_rounds, budget_ms=budget_ms, started=started)

    # -- stages --------------------------------------------------------------------------------
    def _rewrites(self, asked: Collection[str] | None) -> tuple[str, ...]:
        if asked is None:
            return tuple(k for k in REWRITES if getattr(self.settings, k))
        try:
            return parse_rewrites(asked)
        except ValueError as exc:
            raise RetrievalError(str(exc)) from exc

    def _complete(self, question: str, history: Sequence[Turn]) -> tuple[Completion | None, list | None]:
        """The question completed from the conversation, and the entities the question links
        on its own (both None without history: nothing to decide)."""
        if not history:
            return None, None
        own = self.linker.link(question)
        completion = complete(question, history, own, link=self.linker.link)
        if completion.followup and self.rewriter is not None:
            try:
                completion.question = self.rewriter(completion)
                completion.method = "llm"
            except Exception as exc:  # noqa: BLE001 - any failure keeps the rule's completion
                completion.fallback_reason = str(exc)[:300] or type(exc).__name__
        return completion, own

    def _exclusion(self, topics: list[str]) -> Exclusion:
        """The constraint for ``topics``: each topic and its parts ("A and B"), plus every name of
        an entity that a whole part names. An entity linked inside a longer part is not used:
        "the Sales Development and Integrated Marketing departments" must not exclude every
        page under "Marketing" (a development question lost its gold page that way)."""
        parts = list(dict.fromkeys(p for topic in topics for p in [topic, *split_topic(topic)]))
        entities = {le.key for part in parts for le in self.linker.link(part)
                    if le.surface.casefold().strip() == part.casefold().strip()}
        terms = list(parts)
        for key in sorted(entities):
            entity = self.graph.get_entity(key)
            if entity is not None:
                terms += [entity.name, *entity.aliases]
        return Exclusion(topics, list(dict.fromkeys(t for t in terms if t.strip())), entities)

    def _exclude(self, query: Query, results: list[PathResult]) -> list[PathResult]:
        if query.exclusion is None:
            return results
        return query.exclusion.apply(results, self.chunk_index.get)

    def _languages(self) -> frozenset[str] | None:
        """The languages the knowledge base's chunks are written in (None: unknown)."""
        catalog = self.facets()
        return catalog.languages if catalog is not None else None

    def _feedback(self, query: Query, keyword: PathResult) -> list[str]:
        """Entities of the best keyword hits, as extra graph seeds: the bridge entity of a
        multi-hop question is named in the passage that answers its first hop, not in the
        question (docs/decisions.md, "Three paths fused, with the evidence set")."""
        top = [h.id for h in keyword.hits[: self.settings.feedback_chunks]]
        query.feedback_from = top
        by_chunk = self.graph.chunk_entities(top) if top else {}
        linked = {le.key for le in query.linked} | (query.exclusion.entities if query.exclusion else set())
        keys = [k for cid in top for k in by_chunk.get(cid, []) if k not in linked]
        return list(dict.fromkeys(keys))

    def _scripts_of(self) -> Callable[[list[str]], dict[str, bool]] | None:
        """Chunk ids → written mainly outside the Latin script, for fusion to impute the blind
        paths' votes across scripts; None when the dense path cannot compare across scripts (an
        English-only embedder)."""
        return _scripts_reader(self.chunk_index) if self.embedder.multilingual else None

    def meaning_of(self, question: str, hits: Sequence[Hit]) -> Callable[[float], float | None] | None:
        """The gate's ``meaning`` for these hits (read when called, until a sentence reaches the
        bar it is given; None without a model)."""
        across = self.across_meaning
        if across is None:
            return None
        return lambda enough: across(question, hits[: RANKING.gate_depth], enough)

    def _name_ties(self, query: Query, top: list[Hit]) -> NameTies:
        """The question's names that no top hit writes, tied to top hits in another script by the
        graph or by pinyin (``kgrag.retrieve.cross_script``): what the gate reads."""
        read = [HitText(h) for h in top]
        names = [n for n in question_names(query.question, query.linked) if not name_found(n, read)]
        if not names or not top:
            return NameTies()
        return tie_names(names, top, query.linked, self.graph)

    def _default_recency(self) -> Recency | None:
        s = self.settings
        return None if s.recency_half_life_days is None else Recency(
            half_life_days=s.recency_half_life_days, weight=s.recency_weight)


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 2)
