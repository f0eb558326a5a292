"""The three retrieval paths behind one interface (``RetrievalPath.search(query, k)``).

Each returns chunk ids ranked best first; fusion only looks at ranks, so the paths' score
scales never need to agree.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from kgrag.lexicon.titles import title_aliases
from kgrag.models.base import SpaceQuery
from kgrag.retrieve.phrases import holds, quoted_phrases, telling
from kgrag.retrieve.tables import asked_column, has_column
from kgrag.retrieve.tuning import GRAPH_WALK
from kgrag.retrieve.types import PathResult, Query, SeedWalk
from kgrag.retrieve.walk_scores import Reached, top_rows
from kgrag.retrieve.word_forms import content_words, held_share
from kgrag.stores.base import ChunkIndex, GraphReader
from kgrag.stores.filters import SearchFilter
from kgrag.text.bilingual import other_script_terms
from kgrag.text.normalize import normalize_alias
from kgrag.text.scripts import is_mainly_non_latin
from kgrag.types import GraphPath, ScoredId


class DensePath:
    """Chunks by cosine to the question, in each vector space the question searches.

    ``query_vectors`` gives one query per space (a plain embedder: one vector; the script-routed
    default: MiniLM and e5 for an English question, e5 for a Chinese one, as ``SpaceQuery``
    records saying how to read the index's scores). Each is searched on its own; a chunk
    outside a space scores exactly its ``outside`` value there and is dropped, scores are read
    back into the model's similarity, and the lists are merged on scores standardized per list
    (two models' cosines are not comparable: e5's bunch in 0.7–0.9)."""

    name = "dense"

    def __init__(self, index: ChunkIndex, query_vectors: Callable[..., list[SpaceQuery]], spaces: bool = False,
                 scripts_of: Callable[[list[str]], dict[str, bool]] | None = None):
        """``spaces``: ``query_vectors`` takes the index's ``holds_dense_columns`` and embeds
        only the spaces it holds (``CorpusEmbedder.query_vectors``). ``scripts_of``: chunk ids →
        written mainly outside the Latin script, for queries that keep the rows of one script
        (``SpaceQuery.rows``; without it they keep all)."""
        self.index = index
        self.query_vectors = query_vectors
        self.spaces = spaces
        self.scripts_of = scripts_of

    def search(self, query: Query, k: int) -> PathResult:
        t = time.perf_counter()
        queries = self._queries(query.question)
        if len(queries) == 1 and queries[0][1:4] == (1.0, 0.0, 0.0):
            hits = self.index.search_dense(queries[0].vector, k, query.filters)
            if queries[0].calibrated:
                hits = [ScoredId(h.id, h.score, h.score) for h in hits]
            return PathResult(self.name, hits, ms=_ms(t))
        return PathResult(self.name, self._search(queries, k, query.filters), ms=_ms(t))

    def _queries(self, text: str) -> list[SpaceQuery]:
        if self.spaces:
            return self.query_vectors(text, self.index.holds_dense_columns)
        return self.query_vectors(text)

    def _search(self, queries: list[SpaceQuery], k: int, filters: SearchFilter | None) -> list[ScoredId]:
        found: list[tuple[SpaceQuery, list[ScoredId]]] = []
        for q in queries:
            one_script = q.rows is not None and self.scripts_of is not None
            hits = self.index.search_dense(q.vector, 2 * k if one_script else k, filters)
            found.append((q, [ScoredId(h.id, cosine, cosine if q.calibrated else None) for h in hits
                              if abs(h.score - q.outside) > 1e-6 for cosine in [h.score * q.scale + q.shift]]))
        # The chunks' scripts, read once for every query that keeps the rows of one script.
        kept = [h.id for q, scored in found if q.rows is not None for h in scored]
        scripts = self.scripts_of(kept) if kept and self.scripts_of is not None else {}
        lists: list[list[ScoredId]] = []
        for q, scored in found:
            if q.rows is not None and self.scripts_of is not None:
                scored = [h for h in scored if scripts.get(h.id, q.rows) == q.rows][:k]
            if q.joins and lists:
                lists[-1] = _joined(lists[-1], scored, k)
            else:
                lists.append(scored)
        return _merge_standardized(lists, k)


def _joined(first: list[ScoredId], second: list[ScoredId], k: int) -> list[ScoredId]:
    """Two lists on one scale as one, best first (a chunk in both keeps its better score)."""
    best: dict[str, ScoredId] = {}
    for hit in [*first, *second]:
        if hit.id not in best or hit.score > best[hit.id].score:
            best[hit.id] = hit
    return sorted(best.values(), key=lambda h: (-h.score, h.id))[:k]


def _merge_standardized(lists: list[list[ScoredId]], k: int) -> list[ScoredId]:
    """One ranking from lists scored by different models: each score is standardized within its
    own list (z = (s - mean) / std over that list's candidates), a chunk takes its best z, and
    keeps the cosine of the list that gave it. A hit that stands out in its own model's ranking
    goes first, whichever model's raw scale runs higher. One list keeps its order. A chunk keeps
    its cosine in the gate's calibrated space (``ScoredId.calibrated``) from whichever list holds it."""
    nonempty = [hits for hits in lists if hits]
    if len(nonempty) <= 1:
        return (nonempty[0] if nonempty else [])[:k]
    calibrated = {h.id: h.calibrated for hits in nonempty for h in hits if h.calibrated is not None}
    best: dict[str, tuple[float, ScoredId]] = {}
    for hits in nonempty:
        scores = np.array([h.score for h in hits], dtype=np.float64)
        std = float(scores.std())
        z = (scores - scores.mean()) / std if std > 0 else np.zeros_like(scores)
        for hit, hit_z in zip(hits, z.tolist(), strict=True):
            if hit.id not in best or hit_z > best[hit.id][0]:
                best[hit.id] = (hit_z, hit)
    ranked = sorted(best.values(), key=lambda pair: -pair[0])
    return [ScoredId(hit.id, hit.score, calibrated.get(hit.id)) for _, hit in ranked[:k]]


class KeywordPath:
    """BM25 over the analyzed question, plus the other names of the entities it links."""

    name = "bm25"

    def __init__(self, index: ChunkIndex):
        self.index = index

    def search(self, query: Query, k: int) -> PathResult:
        t = time.perf_counter()
        text = " ".join([query.keyword_text, *query.expansions])
        hits = self.index.search_bm25(text, k, query.filters)
        phrases = [p for p in quoted_phrases(query.keyword_text) if telling(p)]
        if phrases:
            hits = self._phrases_first(hits, phrases, k, query)
        return PathResult(self.name, hits, ms=_ms(t))

    def _phrases_first(self, hits: list[ScoredId], phrases: list[str], k: int, query: Query) -> list[ScoredId]:
        """The hits holding more quoted phrases verbatim first, BM25's order among equals; the
        chunks a phrase's own BM25 search finds holding it join after BM25's own."""
        pool = list(hits)
        seen = {h.id for h in hits}
        for phrase in phrases:
            for hit in self.index.search_bm25(phrase, k, query.filters):
                if hit.id not in seen:
                    seen.add(hit.id)
                    pool.append(hit)
        texts = {c.id: f"{c.section_path}\n{c.text}" for c in self.index.get([h.id for h in pool])}
        held = {h.id: sum(holds(texts.get(h.id, ""), p) for p in phrases) for h in pool}
        own = {h.id for h in hits}
        ranked = sorted(range(len(pool)), key=lambda i: (-held[pool[i].id], i))
        return [pool[i] for i in ranked if held[pool[i].id] or pool[i].id in own][:k]


def other_language_held(question: str, languages: frozenset[str] | None) -> bool:
    """Whether the knowledge base may hold passages in the other language than the question's:
    its chunks' detected languages (``FacetCatalog.languages``) include Chinese or mixed text for
    a question in Latin letters, English or mixed text for a Chinese one; True when they are
    unknown. A knowledge base in the question's language only is never searched by translation
    (and the dictionary is never read for it)."""
    if not languages:
        return True
    wanted = {"en", "mixed"} if is_mainly_non_latin(question) else {"zh", "mixed"}
    return bool(wanted & languages)


class TranslatedKeywordPath:
    """BM25 over the question's words in the other script (``kgrag.text.bilingual``): the
    keyword path for the passages written in the other language, which the question's own words
    never match. Empty when the dictionary knows none of the question's words, or when the
    knowledge base holds no passage in the other script (its search finds nothing)."""

    name = "translated"

    def __init__(self, index: ChunkIndex, per_word: Callable[[], int]):
        self.index = index
        self.per_word = per_word  # read per question: the settings may change

    def search(self, query: Query, k: int) -> PathResult:
        t = time.perf_counter()
        terms = other_script_terms(query.keyword_text, self.per_word())
        hits = self.index.search_bm25(" ".join(terms), k, query.filters) if terms else []
        return PathResult(self.name, hits, ms=_ms(t), keep_head=False)


class GraphWalkPath:
    """Chunks that mention the entities the question links, or entities within ``hops`` of them.

    A chunk's score sums, over the reached entities it mentions, ``confidence × GRAPH_WALK.hop_decay**hops
    × Π edge factors × specificity`` where specificity is the entity's IDF over chunks
    (normalized to 0..1): an entity mentioned everywhere says little. The best paths are kept
    as evidence. Filters are applied by the pipeline (the graph does not hold chunk metadata).

    The question's entities and the feedback seeds walk separately (the feedback walk a hop
    shorter and with half the entity budget: its seeds are a hop from the question already), and
    ``PathResult.support`` keeps, per page reached, each seed's best route to the entity it is
    about — which fusion reads to build the evidence set (``kgrag.retrieve.evidence``).
    """

    name = "graph"

    def __init__(self, graph: GraphReader, corpus_size: Callable[[], int], hops: int = 2,
                 max_entities: int = 200,
                 read_chunks: Callable[[list[str]], dict[str, tuple[str, str]]] | None = None):
        self.graph = graph
        self.read_chunks = read_chunks  # chunk id → (title, text), for the strongest candidates
        self.corpus_size = corpus_size
        self.hops = hops
        self.max_entities = max_entities

    def walk_question(self, query: Query) -> SeedWalk | None:
        """The walk from the question's own entities (linked and described): the part of
        ``search`` that needs no feedback seeds. The pipeline runs it while BM25 searches, since
        the feedback seeds come from BM25's best hit and SQLite's FTS releases the GIL the walk
        holds; ``search(query, k, walked)`` then walks only the feedback seeds and returns what
        ``search(query, k)`` alone returns. None: the question has no entity to walk from."""
        t = time.perf_counter()
        seeds = tuple(_question_confidence(query))
        if not seeds:
            return None
        n = max(1, self.corpus_size())
        paths, df = self._walk(list(seeds), n, self.hops, self.max_entities)
        return SeedWalk(seeds, n, paths, df, _ms(t))

    def search(self, query: Query, k: int, walked: SeedWalk | None = None) -> PathResult:
        """``walked``: ``walk_question(query)`` run before — beside BM25, or in an earlier round
        of the same question (used when its seeds are still the question's; its time is the
        caller's to count)."""
        t = time.perf_counter()
        if not query.linked and not query.described and not query.feedback:
            return PathResult(self.name, [], ms=_ms(t))
        confidence = _question_confidence(query)
        question = tuple(confidence)
        feedback = [key for key in dict.fromkeys(query.feedback) if key not in confidence]
        confidence.update((key, GRAPH_WALK.feedback_confidence) for key in feedback)
        if walked is None or walked.seeds != question:
            walked = self.walk_question(query)
        n = walked.n if walked is not None else max(1, self.corpus_size())
        walks = [walked] if walked is not None else []
        if feedback:
            # Feedback seeds sit one hop from the question already: their walk is a hop shorter,
            # with half the budget when the question's walk reached anything (``_routes``).
            budget = self.max_entities // 2 if walked is not None and walked.paths else self.max_entities
            paths, df = self._walk(feedback, n, max(0, self.hops - 1), budget)
            walks.append(SeedWalk(tuple(feedback), n, paths, df))
        routes = self._routes(walks, confidence)
        reached = Reached.collect(self.graph.mentions_of(list(routes), GRAPH_WALK.mentions_per_entity), routes)
        # Titles are read for the strongest candidates only (reading thousands costs more than
        # the whole walk); the bonus can at most triple a chunk's score.
        read = self._read(reached.home_candidates(k, question, GRAPH_WALK.home_candidates, GRAPH_WALK.home_candidates_per_seed))
        homes = self._home_entities({cid: title for cid, (title, _) in read.items() if title})
        home = reached.home_mask(homes)
        gain = np.where(home, reached.gain * GRAPH_WALK.home_bonus, reached.gain)
        support = reached.support(gain, home)
        scores = reached.scores(gain)
        # Endpoints read: a section the walk reaches that also holds the question's words ranks
        # above its neighbours that do not ("MEDDPPICC ... what does the 'E' stand for": every
        # MEDDPPICC section is one hop away, the one on the economic buyer holds the words).
        # And one whose table has a column for what is asked ("What is the Slack channel for the
        # executive who …": the section with the Member | Channel table).
        words = content_words(query.keyword_text) if read else set()
        column = asked_column(query.keyword_text) if read else None
        row = reached.row_of
        for cid, (title, text) in read.items():
            if cid in row and scores[row[cid]] > 0:
                table = GRAPH_WALK.table_weight if column is not None and has_column(text, column) else 0.0
                scores[row[cid]] *= 1.0 + GRAPH_WALK.words_weight * held_share(words, f"{title}\n{text}") + table
        ranked = [ScoredId(reached.chunk_ids[i], float(scores[i])) for i in top_rows(scores, k, reached.chunk_ids)]
        ids = [hit.id for hit in ranked]
        kept = self._evidence(query, reached.evidence(gain, ids), ids)
        return PathResult(self.name, ranked, kept, ms=_ms(t), support=support, question_walk=walked)

    def _routes(self, walks: list[SeedWalk], confidence: dict[str, float]) -> dict[str, list[tuple[float, GraphPath]]]:
        """entity → its (weight, path) routes, the best first: one per seed group that reached
        it. Each group walks with its own entity budget, so the question's own entities keep
        their neighbourhoods even when feedback seeds (a long passage's every name) would fill
        a shared budget first: a comparison question's second film then still reaches its
        director.

        The groups after the first (the feedback seeds) get half the budget: about the same
        recall as a full one, in about one shared walk's time (docs/decisions.md, "Three paths
        fused, with the evidence set")."""
        routes: dict[str, list[tuple[float, GraphPath]]] = {}
        for walk in walks:
            for key, path in walk.paths.items():
                count = walk.df.get(key, 0)
                if not count:
                    continue
                # Too general entities are not followed, but one the question names stays (with
                # its low specificity) so "What is in the United States?" still finds something.
                if path.hops and count > GRAPH_WALK.max_entity_df * walk.n:
                    continue
                specificity = math.log1p(walk.n / count) / math.log1p(walk.n)
                routes.setdefault(key, []).append(
                    (confidence[path.nodes[0]] * _path_factor(path) * specificity, path))
        for options in routes.values():
            options.sort(key=lambda wp: -wp[0])
        return routes

    def _evidence(self, query: Query, evidence: dict[str, list[tuple[float, GraphPath]]],
                  chunk_ids: list[str]) -> dict[str, list[GraphPath]]:
        """The paths shown in the trace, from the question's own entities first. A path that
        starts at a feedback seed is shown from the question entity next to that seed, when
        there is one ("Glass Harbor" → "Maret Kuusik" → ...), so the trace explains the hop."""
        linked = list(dict.fromkeys(le.key for le in query.linked))
        bridges: dict[str, GraphPath] = {}
        if linked and query.feedback:
            bridges = {k: p for k, p in self.graph.neighbors(linked, 1, self.max_entities).items() if p.hops}
        out: dict[str, list[GraphPath]] = {}
        for cid in chunk_ids:
            shown = []
            for _gain, path in sorted(evidence[cid], key=lambda e: -e[0]):
                bridge = bridges.get(path.nodes[0])
                if bridge is not None:
                    path = GraphPath(bridge.nodes + path.nodes[1:], bridge.edges + path.edges,
                                     bridge.weights + path.weights)
                if path not in shown:
                    shown.append(path)
            shown.sort(key=lambda p: p.nodes[0] not in linked)  # stable: keeps gain order
            out[cid] = shown[:GRAPH_WALK.evidence_per_chunk]
        return out

    def _walk(self, seeds: list[str], n: int, hops: int, budget: int) -> tuple[dict[str, GraphPath], dict[str, int]]:
        """Paths from the seeds, one hop level at a time. A level only continues from the
        ``GRAPH_WALK.frontier`` most specific, best-connected entities of the last one: walking on through
        a hub ("United States", thousands of neighbours) costs the most and finds nothing a
        specific entity would not."""
        paths = self.graph.neighbors(seeds, min(hops, 1), budget)
        df = self.graph.entity_chunk_counts(list(paths))
        frontier = [k for k, p in paths.items() if p.hops == 1]
        for _ in range(hops - 1):
            specific = [k for k in frontier if 0 < df.get(k, 0) <= GRAPH_WALK.max_entity_df * n]
            specific.sort(key=lambda k: (-_path_factor(paths[k]) / math.log1p(df[k]), k))
            specific = specific[:GRAPH_WALK.frontier]
            room = budget - len(paths)
            if not specific or room <= 0:
                break
            frontier = []
            for key, step in sorted(self.graph.neighbors(specific, 1, budget).items()):
                if key in paths or step.hops != 1:
                    continue
                via = paths[step.nodes[0]]
                paths[key] = GraphPath(via.nodes + step.nodes[1:], via.edges + step.edges,
                                       via.weights + step.weights)
                frontier.append(key)
                if len(frontier) >= room:
                    break
            df.update(self.graph.entity_chunk_counts(frontier))
        return paths, df

    def _read(self, chunk_ids: set[str]) -> dict[str, tuple[str, str]]:
        if self.read_chunks is None or not chunk_ids:
            return {}
        return self.read_chunks(sorted(chunk_ids))

    def _home_entities(self, titles: dict[str, str]) -> dict[str, set[str]]:
        """chunk → the entities its title names: a chunk is *about* the entity in its title
        (a Wikipedia page, a manual section), so a path into it counts more than a passing
        mention elsewhere."""
        if not titles:
            return {}
        by_alias: dict[str, list[str]] = {}
        for cid, title in titles.items():
            for form in title_aliases(title):
                by_alias.setdefault(normalize_alias(form), []).append(cid)
        homes: dict[str, set[str]] = {}
        for alias, keys in self.graph.lookup_aliases(list(by_alias)).items():
            for cid in by_alias.get(alias, ()):
                homes.setdefault(cid, set()).update(keys)
        return homes


def _question_confidence(query: Query) -> dict[str, float]:
    """The question's own seeds (linked, then described: ``kgrag.retrieve.describe``) with the
    confidence of their link, the best when an entity is both."""
    confidence: dict[str, float] = {}
    for le in [*query.linked, *query.described]:
        confidence[le.key] = max(confidence.get(le.key, 0.0), le.score)
    return confidence


def _path_factor(path: GraphPath) -> float:
    factor = GRAPH_WALK.hop_decay ** path.hops
    for w in path.weights:
        factor *= w / (w + GRAPH_WALK.edge_half)
    return factor


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 2)
