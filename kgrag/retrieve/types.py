"""What the retrieval pipeline hands to generation and to the HTTP layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from kgrag.stores.filters import SearchFilter
from kgrag.types import Chunk, GraphPath, ScoredId

if TYPE_CHECKING:
    from kgrag.retrieve.exclude import Exclusion
    from kgrag.retrieve.followup import Completion
    from kgrag.retrieve.iterate import Iteration
    from kgrag.retrieve.paths import SeedWalk
    from kgrag.retrieve.rewrite import Rewriting
    from kgrag.retrieve.understand import Understanding

PATHS = ("dense", "bm25", "graph")


@dataclass
class LinkedEntity:
    """An entity found in the question. ``candidates`` > 1 means the alias is ambiguous: every
    candidate is used and the trace shows them all rather than picking silently."""

    surface: str  # as written in the question
    key: str
    name: str
    method: str  # "exact" | "fuzzy" | "words" (described, kgrag.retrieve.describe)
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
    # Topics no hit may be about, applied on every path (kgrag.retrieve.exclude).
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


class RetrievalPath(Protocol):
    name: str

    def search(self, query: Query, k: int) -> PathResult: ...


@dataclass
class PathRank:
    rank: int  # 1-based
    score: float


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
    # The LLM query rewrites tried (kgrag.retrieve.rewrite), each with its lists or why none.
    rewriting: list[Rewriting] = field(default_factory=list)

    @property
    def llm_calls(self) -> int:
        """LLM calls retrieval made for this question (rewrites and the iteration driver)."""
        return sum(r.llm_calls for r in self.rewriting) + (self.iteration.llm_calls if self.iteration else 0)
