"""What the retrieval pipeline hands to generation and to the HTTP layer, and the records of
what each stage decided, as the trace shows them."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kgrag.retrieve.tuning import LINKING
from kgrag.stores.filters import SearchFilter
from kgrag.text.scripts import has_han
from kgrag.types import Chunk, GraphPath, ScoredId

# The best language-neutral similarity of a question with a sentence written in another script
# than it that could answer it, among the first hits, or the first reaching the bar it is given
# (None: no such sentence, or no multilingual model; 0.0: none that could answer). Given to
# retrieval by the components (``kgrag.generate.other_script``): retrieval splits no sentences.
AcrossMeaning = Callable[[str, Sequence["Hit"], float], float | None]

PATHS = ("dense", "bm25", "graph")


@dataclass
class LinkedEntity:
    """An entity found in the question. ``candidates`` > 1 means the alias is ambiguous: every
    candidate is used and the trace shows them all rather than picking silently."""

    surface: str  # as written in the question
    key: str
    name: str
    method: str  # "exact" | "fuzzy" | "pinyin" | "words" (described, kgrag.retrieve.describe)
    score: float = 1.0
    candidates: list[str] = field(default_factory=list)


@dataclass
class Query:
    question: str
    top_k: int = 10
    filters: SearchFilter | None = None  # parsed at the edge (kgrag.stores.filters)
    modes: tuple[str, ...] = PATHS  # which paths run
    linked: list[LinkedEntity] = field(default_factory=list)  # filled once, shared by paths
    expansions: list[str] = field(default_factory=list)  # alias surface forms for BM25
    # Headings and terms the question describes without naming them: graph seeds only.
    described: list[LinkedEntity] = field(default_factory=list)
    # Entities of the best keyword hits: extra, weaker seeds for the graph walk (feedback).
    feedback: list[str] = field(default_factory=list)
    feedback_from: list[str] = field(default_factory=list)  # the keyword hits they were read from
    # Paths left out for this question, with the reason (shown in the trace).
    skipped: dict[str, str] = field(default_factory=dict)
    # How the question was completed from the conversation (None: asked without history).
    completion: Completion | None = None
    # What the LLM-free rules decided (kgrag.retrieve.understand): filler, exclusions, small talk.
    understanding: Understanding | None = None
    # Topics no hit may be about, applied on every path (``Exclusion``).
    exclusion: Exclusion | None = None

    @property
    def keyword_text(self) -> str:
        """What BM25 and the entity linker read: the question without politeness and filler."""
        u = self.understanding
        return u.keyword_text if u is not None and u.search_text == self.question else self.question

    @property
    def original_question(self) -> str:
        return self.completion.original if self.completion else self.question


@dataclass(frozen=True)
class SeedSupport:
    """How one graph seed (a question entity, or a feedback entity) reaches a page: the entity
    whose page the chunk is (its title names it), the hops walked from the seed to it, and the
    route's gain. Fusion reads these to find each question entity's page and its bridge."""

    seed: str
    entity: str
    hops: int
    gain: float


# Joins a path's name and the round or rewrite that searched a list ("bm25@mq1").
SUFFIX = "@"


@dataclass
class PathResult:
    """One path's ranked chunk ids, best first, plus graph evidence per chunk id."""

    name: str
    hits: list[ScoredId]
    evidence: dict[str, list[GraphPath]] = field(default_factory=dict)
    ms: float = 0.0
    # Graph path only: page chunk id → seed → that seed's best route to the entity the page is
    # about (only chunks whose title names an entity the walk reached).
    support: dict[str, dict[str, SeedSupport]] = field(default_factory=dict)
    # Graph path only: the walk from the question's own entities, which a later round of the
    # same question walks again unchanged (kgrag.retrieve.paths.GraphWalkPath.walk_question).
    question_walk: SeedWalk | None = None
    # False for a list searched with an LLM's rewrite: it votes in fusion, but its first hit is
    # not kept in the fused head (fusion.keep_path_heads).
    keep_head: bool = True

    @property
    def path(self) -> str:
        """The path that searched this list: its name without the suffix a later round or an
        LLM rewrite adds ("graph@2", "bm25@mq1" → "graph", "bm25")."""
        return self.name.partition(SUFFIX)[0]

    def tag(self, suffix: str) -> None:
        """Mark the list as a later round's or a rewrite's: "bm25" → "bm25@mq1"."""
        self.name = f"{self.name}{SUFFIX}{suffix}"


@dataclass
class Exclusion:
    """Exclusion constraints ("not about X", "除了X"): no path may return a chunk about X.

    A chunk is *about* an excluded topic when its title or section heading names the topic (or
    any other name of an entity the topic links to: "not about LCA" also drops the section
    titled 最近公共祖先), or when its text names it at least ``LINKING.excluded_min_mentions`` times: a single
    passing mention does not make a chunk about X ("Excluding the Sales Development and
    Integrated Marketing departments, which team ...?" is answered by the page that lists all
    the marketing teams; docs/decisions.md). The constraint is applied to every path's ranked
    list before fusion (``apply``) and once more to the fused hits, which also covers
    evidence-set placements no path ranked; the excluded entities never seed the graph walk."""

    topics: list[str]
    terms: list[str]  # the topics and the other names of the entities they link
    entities: set[str] = field(default_factory=set)  # linked from the topics: never graph seeds
    dropped: dict[str, int] = field(default_factory=dict)  # path → chunks removed from its list

    def __post_init__(self) -> None:
        parts = [re.escape(t) if has_han(t) else rf"(?<!\w){re.escape(t)}(?!\w)" for t in self.terms if t.strip()]
        self._pattern = re.compile("|".join(parts), re.IGNORECASE) if parts else None

    def about(self, chunk: Chunk) -> bool:
        """Whether the chunk is about an excluded topic (see the module docstring)."""
        if self._pattern is None:
            return False
        if self._pattern.search(f"{chunk.title or ''} {chunk.section_path or ''}"):
            return True
        return sum(1 for _ in zip(range(LINKING.excluded_min_mentions), self._pattern.finditer(chunk.text))) >= LINKING.excluded_min_mentions

    def excluded_ids(self, ids: Sequence[str], get: Callable[[list[str]], list[Chunk]]) -> set[str]:
        """The ids among ``ids`` whose chunks are about an excluded topic."""
        wanted = list(dict.fromkeys(ids))
        return {c.id for c in get(wanted) if self.about(c)} if wanted else set()

    def apply(self, results: list[PathResult], get: Callable[[list[str]], list[Chunk]]) -> list[PathResult]:
        """Each path's list without the excluded chunks (counted in ``dropped``)."""
        bad = self.excluded_ids([h.id for r in results for h in r.hits], get)
        for r in results:
            kept = [h for h in r.hits if h.id not in bad]
            if len(kept) != len(r.hits):
                self.dropped[r.name] = self.dropped.get(r.name, 0) + len(r.hits) - len(kept)
                r.hits = kept
                r.evidence = {cid: p for cid, p in r.evidence.items() if cid not in bad}
                r.support = {cid: s for cid, s in r.support.items() if cid not in bad}
        return results

    def trace(self) -> dict[str, object]:
        return {"topics": self.topics, "terms": self.terms, "entities": sorted(self.entities),
                "dropped": self.dropped}


@dataclass
class Completion:
    """How a question was completed from the conversation (shown in the trace)."""

    question: str  # the text the paths search with (the question itself when standalone)
    original: str
    followup: bool = False
    reason: str = ""  # why it is (or is not) taken as a follow-up
    carried_from: list[str] = field(default_factory=list)  # the earlier questions carried
    own_terms: list[str] = field(default_factory=list)  # the follow-up's content words kept
    method: str = "rule"  # "rule" | "llm": who wrote ``question`` for a follow-up
    # A follow-up that asks for a neighbour by position ("the next one", "the level above that"):
    # the iteration driver does not chain from it (kgrag.retrieve.iterate).
    positional: bool = False
    # For a positional follow-up: the chunks the last turn cited, whose neighbour it asks about
    # (kgrag.retrieve.cited_neighbour), and which way ("after", "before"; None: either).
    anchor: tuple[str, ...] = ()
    direction: str | None = None
    # For a positional follow-up: what the last turn answered (None: not given), so the answerer
    # finds the item it was about (kgrag.generate.extractive.list_neighbour).
    previous_answer: str | None = None
    position_note: str | None = None  # why the cited chunk or its neighbour was not placed
    fallback_reason: str | None = None  # why an LLM rewrite was not used
    # What the conversation is about at this turn, as the questions name it (the main one
    # first): a standalone question's own names, carried on by its follow-ups.
    subject: list[str] = field(default_factory=list)
    # The follow-up written as a question of its own ("When did Black Book premiere?"): what
    # the answerer reads (None: a positional follow-up, or nothing to carry).
    standalone: str | None = None
    switched: tuple[str, str] | None = None  # a switch to a sibling: (the subject left, the one named)
    new_topic: bool = False  # a standalone question about something other than the last subject

    @property
    def for_generation(self) -> str:
        """The question as the answer generator reads it: a follow-up written as a question of
        its own where the rule could (``standalone``), else its own wording with what it
        follows up on, so the answer is about the right subject."""
        if not self.followup:
            return self.original
        if self.method == "llm":
            return self.question  # already a standalone question
        if self.standalone:
            return self.standalone
        return f"{self.original} (follow-up to: {' / '.join(self.carried_from)})"

    def trace(self, carried_entities: Sequence[LinkedEntity] = ()) -> dict:
        return {
            "followup": self.followup,
            "reason": self.reason,
            "original_question": self.original,
            "completed_question": self.question,
            "carried_from": self.carried_from,
            "own_terms": self.own_terms,
            "method": self.method,
            "positional": self.positional,
            "anchor": list(self.anchor),
            "direction": self.direction,
            "position_note": self.position_note,
            "fallback_reason": self.fallback_reason,
            "carried_entities": [le.name for le in carried_entities],
            "subject": self.subject,
            "standalone_question": self.standalone,
            "switched": None if self.switched is None else {"from": self.switched[0], "to": self.switched[1]},
            "new_topic": self.new_topic,
        }


@dataclass
class Understanding:
    """What the rules decided about one question.

    ``search_text``: what the paths search with (exclusion clauses and an opening concession
    removed); ``keyword_text``: that without filler, for BM25 and entity linking. ``exclusions``: topics no hit may be
    about. ``reply``: set for small talk — answer it, retrieve nothing."""

    original: str
    search_text: str
    keyword_text: str
    exclusions: list[str] = field(default_factory=list)
    stripped: list[str] = field(default_factory=list)  # the filler removed, as written
    set_aside: list[str] = field(default_factory=list)  # an opening concession, not what is asked
    reply: str | None = None
    route: str = "retrieve"  # "retrieve" | "small_talk"
    # Document constraints found in the question (applied or not, with the reason) and the
    # filter the applied ones make; ``filters``: that merged with the request's (the search's).
    constraints: list[dict[str, Any]] = field(default_factory=list)
    constraint_filter: SearchFilter | None = None
    filters: SearchFilter | None = None

    def trace(self) -> dict[str, object]:
        out: dict[str, object] = {"route": self.route, "search_text": self.search_text,
                                  "keyword_text": self.keyword_text, "stripped": self.stripped,
                                  "exclusions": self.exclusions, "set_aside": self.set_aside}
        if self.constraints:
            out["constraints"] = self.constraints
            out["filters"] = self.filters.as_dict() if self.filters is not None else None
        return out


@dataclass
class Round:
    """One round as the trace shows it. Round 1 is the first retrieval."""

    number: int
    query: str
    new_entities: list[str] = field(default_factory=list)
    hits_added: list[str] = field(default_factory=list)  # chunk ids new in the top ``top_k``
    paths: list[str] = field(default_factory=list)  # the path lists this round added
    why: str = ""
    ms: float = 0.0

    def trace(self) -> dict[str, object]:
        return {"round": self.number, "query": self.query, "new_entities": self.new_entities,
                "hits_added": self.hits_added, "paths": self.paths, "why": self.why, "ms": self.ms}


@dataclass
class Iteration:
    """The rounds run (the first retrieval included) and why the loop stopped."""

    driver: str
    rounds: list[Round]
    stopped: str
    llm_calls: int = 0

    def trace(self) -> dict[str, object]:
        return {"driver": self.driver, "rounds": [r.trace() for r in self.rounds], "stopped": self.stopped,
                "llm_calls": self.llm_calls}


@dataclass(frozen=True)
class SeedWalk:
    """One seed group walked (``GraphWalkPath._walk``): its seeds, the corpus size the walk
    judged entities' specificity by, the paths it reached, their entities' chunk counts, and
    the milliseconds it took."""

    seeds: tuple[str, ...]
    n: int
    paths: dict[str, GraphPath]
    df: dict[str, int]
    ms: float = 0.0


@dataclass
class Rewriting:
    """One rewrite as the trace shows it: what the LLM gave, the lists each text added, each
    list's best chunk ids (per sub-question for ``decompose``), LLM calls, ms, and why it
    added nothing when it did not (``fallback_reason``)."""

    kind: str
    queries: list[dict[str, object]] = field(default_factory=list)  # {"text", "paths", "evidence"}
    llm_calls: int = 0
    llm_ms: float = 0.0
    ms: float = 0.0
    fallback_reason: str | None = None

    def trace(self) -> dict[str, object]:
        return {"kind": self.kind, "queries": self.queries, "llm_calls": self.llm_calls, "llm_ms": self.llm_ms,
                "ms": self.ms, "fallback_reason": self.fallback_reason}


class RetrievalPath(Protocol):
    name: str

    def search(self, query: Query, k: int) -> PathResult: ...


@dataclass
class PathRank:
    rank: int  # 1-based
    score: float
    calibrated: float | None = None  # a dense hit's cosine on the gate's scale (ScoredId.calibrated)


@dataclass
class Hit:
    chunk: Chunk
    score: float  # the final ordering score (reranker score when one ran, else fused)
    paths: dict[str, PathRank] = field(default_factory=dict)
    fused_rank: int = 0
    fused_score: float = 0.0
    rerank_rank: int | None = None
    rerank_score: float | None = None
    graph_paths: list[GraphPath] = field(default_factory=list)
    # The fusion rule that put the hit at its fused place (see kgrag.retrieve.fusion.Fused).
    placed_by: dict[str, object] = field(default_factory=lambda: {"rule": "fusion"})
    parent: Chunk | None = None  # what generation reads (None: the chunk itself)

    @property
    def context(self) -> Chunk:
        return self.parent or self.chunk


@dataclass(frozen=True)
class NameTies:
    """question name → ids of the chunks written in another script that the name is tied to
    (``kgrag.retrieve.cross_script``), and how each tie was made ("graph" or "transliteration")."""

    by_name: dict[str, frozenset[str]] = field(default_factory=dict)
    how: dict[str, str] = field(default_factory=dict)

    def tied(self, name: str, chunk_ids: Collection[str]) -> bool:
        return not self.by_name.get(name, frozenset()).isdisjoint(chunk_ids)

    def to_dict(self) -> dict[str, object]:
        return {name: {"chunks": sorted(ids), "by": self.how.get(name)} for name, ids in self.by_name.items() if ids}


@dataclass
class RetrievalResult:
    query: Query
    hits: list[Hit]
    reranker: str | None = None  # which reranker ran (None: fused order stands)
    timings_ms: dict[str, float] = field(default_factory=dict)
    # True when nothing passed the relevance threshold: generation abstains.
    below_threshold: bool = False
    # The abstention gate's signals and reason (kgrag.retrieve.abstain.Assessment.to_dict()).
    gate: dict[str, object] = field(default_factory=dict)
    # The weight each path voted with in fusion, why any differs from the setting, and the
    # chunk ids fusion placed as the question's evidence set.
    path_weights: dict[str, float] = field(default_factory=dict)
    weight_reasons: dict[str, str] = field(default_factory=dict)
    evidence_set: list[str] = field(default_factory=list)
    # The retrieve–reason rounds (None: iteration was off or not possible for these paths).
    iteration: Iteration | None = None
    # The LLM query rewrites tried (kgrag.retrieve.llm_rewrites), each with its lists or why none.
    rewriting: list[Rewriting] = field(default_factory=list)
    # Options of the request that ran degraded, each saying which setting was missing
    # (kgrag.request_options).
    warnings: list[str] = field(default_factory=list)
    # The question's names tied to hits written in another script (kgrag.retrieve.cross_script).
    name_ties: NameTies | None = None

    @property
    def llm_calls(self) -> int:
        """LLM calls retrieval made for this question (rewrites and the iteration driver)."""
        return sum(r.llm_calls for r in self.rewriting) + (self.iteration.llm_calls if self.iteration else 0)
