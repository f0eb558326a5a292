"""Response bodies of the HTTP API as pydantic models: the OpenAPI document's response schemas
are generated from these (``kgrag/server/openapi.py``), and the schemathesis run checks that
every response the server sends matches them.

The routes build their JSON from the pipeline's own ``to_dict``/``result_dict`` shapes; these
models describe those shapes (extra keys are allowed, so adding a field never breaks a client).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


# -- errors ----------------------------------------------------------------------------------
class ErrorDetail(_Open):
    code: str = Field(description="machine-readable, e.g. invalid_request, not_found, unauthorized")
    message: str = Field(description="what is wrong, naming the field or value")
    request_id: str = Field(description="the request's X-Request-Id: its line in the server log")


class ErrorBody(_Open):
    error: ErrorDetail


# -- retrieval -------------------------------------------------------------------------------
class PathRank(_Open):
    rank: int
    score: float


class GraphPathOut(_Open):
    nodes: list[str] = Field(description="entity keys walked, from a linked entity to one the chunk mentions")
    edges: list[str]
    weights: list[float]
    hops: int


class HitTrace(_Open):
    paths: dict[str, PathRank] = Field(description="per retrieval path that found the chunk: its rank and score")
    fused_rank: int
    fused_score: float
    rerank_rank: int | None
    rerank_score: float | None
    graph_paths: list[GraphPathOut]
    placed_by: dict[str, Any] = Field(description="the fusion rule that put the hit at its fused place: "
                                      "{rule: fusion}, {rule: path_head, path}, or an evidence-set place "
                                      "{rule: entity_page | bridge, entity, surface, page_of, hops}, or for a "
                                      "positional follow-up {rule: previous_answer | position, anchor, direction}")


class ParentChunk(_Open):
    chunk_id: str
    text: str


class HitOut(_Open):
    chunk_id: str
    doc_id: str
    source: str
    title: str
    page: int | None
    section_path: str
    start: int
    end: int
    score: float
    text: str
    snippet: str
    parent: ParentChunk | None = None
    trace: HitTrace


class LinkedEntityOut(_Open):
    surface: str
    key: str
    name: str
    method: str
    score: float
    candidates: list[str] = Field(description="all entities an ambiguous alias names (empty when it names one)")


class GenerationTrace(_Open):
    mode: str
    model: str | None
    timings_ms: dict[str, float]
    fallback_reason: str | None


class ConversationTrace(_Open):
    followup: bool = Field(description="whether the question was completed from the history")
    reason: str
    original_question: str
    completed_question: str = Field(description="the text every retrieval path searched with")
    carried_from: list[str] = Field(description="the earlier questions carried into the search")
    own_terms: list[str]
    carried_entities: list[str] = Field(description="entities linked from the carried questions")
    method: Literal["rule", "llm"] = Field(description="who completed a follow-up: the LLM-free rule or the LLM")
    positional: bool = Field(False, description="a follow-up asking for a neighbour by position ('the next one'): "
                                                "no iteration round is chained from it")
    anchor: list[str] = Field(default_factory=list, description="for a positional follow-up: the chunks the last turn "
                              "cited; the hits open with the first and its neighbour (placed_by previous_answer, position)")
    direction: Literal["after", "before"] | None = Field(
        None, description="which way the follow-up points from the cited chunk (null: it does not say)")
    position_note: str | None = Field(None, description="why the cited chunk or its neighbour was not placed")
    fallback_reason: str | None = Field(description="why the LLM's rewrite was not used (null: not tried or used)")


class RoundOut(_Open):
    round: int = Field(description="1: the first retrieval; 2..: the rounds after it")
    query: str = Field(description="the question text this round searched with")
    new_entities: list[str] = Field(description="entity keys this round seeded the graph walk with")
    hits_added: list[str] = Field(description="chunk ids that entered the top hits in this round")
    paths: list[str] = Field(description="the ranked lists this round added to fusion (e.g. graph@2)")
    why: str
    ms: float


class IterationTrace(_Open):
    driver: str = Field(description="who planned the rounds: 'entities' (LLM-free) or 'llm'")
    rounds: list[RoundOut]
    stopped: str = Field(description="why no further round ran")
    llm_calls: int


class RewriteQueryOut(_Open):
    text: str = Field(description="what the LLM gave: a HyDE passage, a paraphrase, a sub-question, a step-back question")
    paths: list[str] = Field(description="the ranked lists it added to fusion (e.g. dense@hyde, graph@sq1)")
    evidence: dict[str, list[str]] = Field(description="list -> its best chunk ids")


class RewritingTrace(_Open):
    kind: Literal["hyde", "multi_query", "decompose", "step_back"]
    queries: list[RewriteQueryOut]
    llm_calls: int
    llm_ms: float = Field(description="milliseconds waiting on the LLM")
    ms: float = Field(description="milliseconds in all, the searches included")
    fallback_reason: str | None = Field(description="why it added nothing (no LLM, timeout, bad JSON, refusal...)")


class ConstraintTrace(_Open):
    text: str = Field(description="the words of the question")
    facet: Literal["date", "doc_type", "tags"]
    value: dict[str, Any] = Field(description="the filter keys it sets (date_from/date_to, doc_type, tags)")
    applied: bool
    reason: str


class UnderstandingTrace(_Open):
    route: Literal["retrieve", "small_talk"] = Field(description="small_talk: answered with a short reply, nothing retrieved")
    search_text: str = Field(description="what the paths searched with (exclusion clauses removed)")
    keyword_text: str = Field(description="what BM25 and entity linking read (politeness and filler removed)")
    stripped: list[str] = Field(description="the filler removed, as written")
    exclusions: list[str] = Field(description="topics the question excludes")
    set_aside: list[str] = Field(default_factory=list, description=(
        "an opening concession ('While X is …, what …?', '虽然…但…') left out of the search: it states "
        "what the answer is not (kgrag/retrieve/understand.py)"))
    constraints: list[ConstraintTrace] | None = Field(
        None, description="constraints on which documents to search read from the question (present only when "
                          "some were found), each applied or not with the reason (kgrag/retrieve/constraints.py)")
    filters: dict[str, Any] | None = Field(
        None, description="the filters searched with: the request's AND the applied constraints (the request wins "
                          "on a key both set); present with constraints")


class ExclusionTrace(_Open):
    topics: list[str]
    terms: list[str] = Field(description="the topics and the other names of the entities they link")
    entities: list[str] = Field(description="entity keys whose chunks are excluded and which seed no walk")
    dropped: dict[str, int] = Field(description="path -> chunks removed from its ranked list")


class TraceOut(_Open):
    modes: list[str]
    linked_entities: list[LinkedEntityOut]
    described_entities: list[LinkedEntityOut] = Field(
        default_factory=list, description="headings and terms the question describes in other words (method "
                                          "'words', surface: the matched name): graph seeds only "
                                          "(kgrag/retrieve/describe.py)")
    expansions: list[str] = Field(description="other names of linked entities added to the BM25 query")
    feedback_entities: list[str]
    skipped_paths: dict[str, str] = Field(description="path -> why it was left out")
    path_weights: dict[str, float] = Field(description="path -> the weight it voted with in fusion")
    path_weight_reasons: dict[str, str] = Field(description="path -> why its weight differs from the setting")
    evidence_set: list[str] = Field(description="chunk ids fusion placed as the question entities' pages and bridges")
    reranker: str | None
    below_threshold: bool
    gate: dict[str, Any] = Field(default_factory=dict, description="the abstention gate's signals (coverage, "
                                 "best_dense, missing_names) and its reason (null: it let the question through)")
    timings_ms: dict[str, float]
    conversation: ConversationTrace | None = Field(None, description="null when no history was sent")
    iteration: IterationTrace | None = Field(None, description="the retrieve-reason rounds; null: one round")
    rewriting: list[RewritingTrace] = Field(default_factory=list, description="the LLM query rewrites run")
    llm_calls: int = Field(0, description="LLM calls retrieval made (rewrites, the LLM iteration driver)")
    understanding: UnderstandingTrace | None = None
    exclusion: ExclusionTrace | None = Field(None, description="null when the question excludes nothing")
    warnings: list[str] = Field(default_factory=list, description="options of the request that ran degraded, "
                                "each naming the setting that was missing (docs/asking.md)")
    generation: GenerationTrace | None = None


class RetrieveResponse(_Open):
    hits: list[HitOut]
    trace: TraceOut
    trace_id: str = Field(description="the request id (X-Request-Id) under which this request was logged")
    conversation_id: str | None = Field(None, description="the conversation this turn was added to, when one was named")


class CitationOut(_Open):
    n: int = Field(description="the [n] used in the answer text")
    chunk_id: str
    doc_id: str
    source: str
    title: str
    page: int | None
    section_path: str
    snippet: str
    highlights: list[list[int]] = Field(description="[start, end) spans of the cited sentences in the chunk's text")


class WorkedOut(_Open):
    date: str = Field(description="the date worked out, YYYY-MM-DD")
    today: str = Field(description="the day it was worked out for")
    rule: str = Field(description="the rule as the cited source writes it ('second Wednesday of each month')")
    source: int = Field(description="the number of the source stating the rule")
    direction: Literal["next", "previous", "current"]
    month: int | None = Field(description="months from today's the question names ('last month': -1)")
    edge: Literal["start", "end"] | None = Field(description="of a period: its start or end")


class QueryResponse(_Open):
    answer: str
    conversation_id: str | None = Field(None, description="the conversation this turn was added to, when one was named")
    citations: list[CitationOut]
    abstained: bool
    mode: Literal["llm", "extractive", "abstain", "small_talk"] = Field(
        description="small_talk: a greeting or thanks, answered without retrieval (trace.understanding.route)")
    model: str | None
    invalid_citations: list[str]
    unsupported_sentences: list[str]
    fallback_reason: str | None
    timings_ms: dict[str, float]
    worked_out: WorkedOut | None = Field(
        None, description="a date the answer worked out for today from a rule a cited source states (null: none)")
    hits: list[HitOut]
    trace: TraceOut
    trace_id: str


# -- entities (graph explorer) ---------------------------------------------------------------
class EntitySummary(_Open):
    key: str
    name: str
    type: str
    aliases: list[str]
    curated: bool
    chunks: int


class EntitySearchResponse(_Open):
    entities: list[EntitySummary]


class NeighbourOut(_Open):
    key: str
    name: str
    type: str | None
    hops: int
    via: list[str] = Field(description="entities between this one and the neighbour")
    relation: str | None
    weight: float | None = Field(description="weight of the edge reaching the neighbour")
    weights: list[float]


class MentioningChunk(_Open):
    chunk_id: str
    count: int
    doc_id: str | None = None
    title: str | None = None
    source: str | None = None
    page: int | None = None
    section_path: str | None = None
    text: str | None = None


class RelationEvidenceOut(_Open):
    type: str = Field(description="the relation type (CO_OCCURS: named in one chunk)")
    chunk_id: str
    weight: float


class RelationDetail(_Open):
    a: str
    b: str
    weight: float = Field(description="summed weight of every relation between the two, either direction")
    relations: list[RelationEvidenceOut] = Field(description="one per (type, evidencing chunk), heaviest first")
    chunks: list[MentioningChunk] = Field(description="the evidencing chunks with their text (count: how many of "
                                                      "the relations each evidences)")


class EntityDetail(_Open):
    key: str
    name: str
    type: str
    aliases: list[str]
    curated: bool
    mention_chunks: int
    hops: int
    neighbours: list[NeighbourOut]
    chunks: list[MentioningChunk]


# -- documents -------------------------------------------------------------------------------
class DocumentOut(_Open):
    id: str
    source: str
    title: str
    hash: str
    format: str


class DocumentList(_Open):
    documents: list[DocumentOut]
    count: int


class FailedFile(_Open):
    path: str
    reason: str


class IngestCounts(_Open):
    new: int
    changed: int
    rebuilt: int = 0  # same content, stored by another ingestion revision or settings: built again
    unchanged: int
    failed: int


class IngestResponse(_Open):
    documents: IngestCounts
    new: list[str]
    changed: list[str]
    rebuilt: list[str] = []  # kgrag.ingest.revision
    unchanged: int
    failed: list[FailedFile]
    chunks_written: int
    cross_lingual_completed: int = 0  # stored English chunks given a multilingual vector block
    chunks_per_second: float
    seconds: dict[str, float]
    wall_seconds: float
    totals: dict[str, int]


class Deleted(_Open):
    deleted: str


# -- health ----------------------------------------------------------------------------------
class Health(_Open):
    status: Literal["ok"]


class Readiness(_Open):
    status: Literal["ready", "starting", "unavailable"]
    documents: int | None = None
    chunks: int | None = None
    entities: int | None = None
    reranker: str | None = None
    llm: str | None = None
    reason: str | None = None


class TrainingStarted(_Open):
    """A reranker training started in the background: follow it at ``GET /v1/jobs/<job>``."""

    job: str
    state: Literal["running"]


class JobStatus(_Open):
    """How far a long admin request (a glossary import) has got."""

    id: str
    kind: str
    state: Literal["running", "done", "failed"]
    stage: str = Field(description="an import: queued, checking (rows), linking (chunks examined), writing, done; "
                       "a reranker training: reading, mining, negatives, training (steps), exporting, checking, "
                       "installing")
    done: int
    total: int
    started_at: float
    finished_at: float | None = None
    message: str | None = None


# -- alias administration --------------------------------------------------------------------
class AliasChange(_Open):
    action: str
    target: str = Field(description="the entity key the change is about")
    changed: bool
    message: str


class AliasListing(_Open):
    """``entities`` (with ``total``) for a listing, or ``ambiguous`` with ``?ambiguous=true``."""

    entities: list[dict[str, Any]] | None = None
    total: int | None = None
    ambiguous: list[dict[str, Any]] | None = None


class AliasShow(_Open):
    key: str
    name: str
    aliases: list[str]


class Suggestions(_Open):
    suggestions: list[dict[str, Any]]


class AuditLog(_Open):
    entries: list[dict[str, Any]]
