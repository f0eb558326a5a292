"""Request bodies, validated by pydantic: a bad field is a 400 naming the field."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Literal, get_args

from flask import request
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from kgrag.asking import MAX_ANSWER_CHARS, MAX_CITED, AskRequest
from kgrag.config import Settings
from kgrag.request_options import check_options
from kgrag.retrieve.llm_rewrites import REWRITES
from kgrag.retrieve.recency import Recency
from kgrag.retrieve.types import PATHS
from kgrag.server.errors import ApiError
from kgrag.stores.filters import SearchFilter
from kgrag.text.checks import control_character, lone_surrogate
from kgrag.types import Turn

MAX_TOP_K = 100
# A follow-up depends on the last few turns; a longer history only costs bytes and time.
MAX_HISTORY_TURNS = 20
MAX_QUESTION_CHARS = 4000
MAX_CHUNK_ID_CHARS = 1000
# No request of this API nests deeper than a few levels (document metadata, filters); the
# limit keeps recursive consumers (pydantic, json.dumps, SQLite JSON) far from Python's
# recursion limit. 100k nested "[" was a 500 RecursionError before.
MAX_JSON_DEPTH = 32
# Text the server strips before use must hold more than white space. Stated in the document
# (Python's ``\S``, the white space ``str.strip`` removes); the route refuses it in its own words.
NOT_BLANK: dict[str, Any] = {"pattern": r"\S"}
PathName = Literal["dense", "bm25", "graph"]
assert set(get_args(PathName)) == set(PATHS), "PathName must list the retrieval paths"
RewriteName = Literal["hyde", "multi_query", "decompose", "step_back"]
assert get_args(RewriteName) == REWRITES, "RewriteName must list the query rewrites"


def _no_control_characters(value: str) -> str:
    if (code := control_character(value)) is not None:
        raise ValueError(f"must not contain control characters (found {code})")
    return value


def _json_integer(value: Any) -> Any:
    """A JSON number, not a string or a boolean that Python would coerce ("5", true). 5.0 is
    accepted: JSON Schema's "integer" includes it, and the OpenAPI document says "integer"."""
    if isinstance(value, (str, bool)):
        raise ValueError(f"expected an integer, got {type(value).__name__} {value!r}")
    return value


class HistoryTurn(BaseModel):
    """One earlier turn of the conversation: the user's question and, optionally, the answer."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS, pattern=r"\S")
    answer: str | None = Field(None, max_length=MAX_ANSWER_CHARS)
    cited_chunk_ids: list[Annotated[str, Field(min_length=1, max_length=MAX_CHUNK_ID_CHARS)]] = Field(
        default_factory=list, max_length=MAX_CITED,
        description="the chunk ids the answer cited (citations[].chunk_id), or the hit shown first: "
                    "'and the next one?' then means the neighbour of the first")

    def turn(self) -> Turn:
        return Turn(self.question.strip(), self.answer, tuple(self.cited_chunk_ids))


class RetrieveRequest(BaseModel):
    # The document says what the validator below refuses: never both sources of history.
    model_config = ConfigDict(extra="forbid", json_schema_extra={"not": {"required": ["history", "conversation_id"]}})

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS, json_schema_extra=NOT_BLANK)
    # "5" or true is refused naming the field, not silently coerced
    top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K), BeforeValidator(_json_integer)] | None = None
    # Parsed here, once: a bad key or value is a 400 naming it (kgrag.stores.filters).
    filters: SearchFilter | None = None
    modes: list[PathName] | None = Field(None, min_length=1, description="retrieval paths to run (default: all)")
    rerank: bool = Field(True, strict=True)
    iterate: bool | None = Field(
        None, strict=True, description="retrieve-reason rounds after the first retrieval (entities the best hits "
                                       "name seed further graph walks); null: the server's retrieval.iterate")
    iterate_driver: Literal["entities", "llm"] | None = Field(
        None, description="who plans the rounds: 'entities' (LLM-free) or 'llm' (needs llm.model); "
                          "null: the server's retrieval.iterate_driver")
    rewrite: list[RewriteName] | None = Field(
        None, description="LLM query rewrites to run before the paths: hyde, multi_query, decompose, "
                          "step_back ([]: none; null: those the server's settings switch on)")
    recency: Recency | None = Field(
        None, description="prefer newer documents: fused score x (1 + weight x 2^(-age_days / half_life_days)); "
                          "null: the server's retrieval.recency_half_life_days (off by default)")
    history: list[HistoryTurn] = Field(
        default_factory=list, max_length=MAX_HISTORY_TURNS,
        description="earlier turns of the conversation, oldest first: a follow-up question "
                    "('and the next one?') is completed from them; a standalone one is not changed")

    conversation_id: str | None = Field(
        None, pattern=r"^[A-Za-z0-9._:-]{1,128}$",
        description="instead of history: a conversation the server keeps (its earlier turns are the history, "
                    "and this turn is added to it); chosen by the client, e.g. a UUID; forgotten after "
                    "server.conversation_ttl_s idle")

    @model_validator(mode="after")
    def _one_source_of_history(self) -> RetrieveRequest:
        if {"history", "conversation_id"} <= self.model_fields_set:
            raise ValueError("send either history or conversation_id, not both")
        return self

    def option_warnings(self, settings: Settings) -> list[str]:
        """The trace's warnings for options this server runs degraded; raises
        ``UnavailableOption`` (a 400) for one it cannot honour (``kgrag.request_options``).
        ``rerank`` counts only when sent: its default means "when a reranker is configured"."""
        return check_options(settings, rerank=self.rerank if "rerank" in self.model_fields_set else None,
                             iterate=self.iterate, iterate_driver=self.iterate_driver, rewrite=self.rewrite)

    def mode_tuple(self) -> tuple[str, ...] | None:
        return None if self.modes is None else tuple(dict.fromkeys(self.modes))

    def checked_ask(self, settings: Settings) -> AskRequest:
        """``ask()`` with this server's warnings for the options it runs degraded; raises
        ``UnavailableOption`` (a 400) for one it cannot honour."""
        return replace(self.ask(), warnings=tuple(self.option_warnings(settings)))

    def ask(self) -> AskRequest:
        """The request as the asking seam takes it (``kgrag.asking``)."""
        return AskRequest(
            self.question, top_k=self.top_k, filters=self.filters, modes=self.mode_tuple(), rerank=self.rerank,
            iterate=self.iterate, iterate_driver=self.iterate_driver,
            rewrites=None if self.rewrite is None else tuple(self.rewrite), recency=self.recency,
            history=tuple(t.turn() for t in self.history), conversation_id=self.conversation_id,
        )


class QueryRequest(RetrieveRequest):
    stream: bool = Field(False, strict=True)


class TextDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, AfterValidator(_no_control_characters)] = Field(min_length=1, max_length=512)
    text: str = Field(min_length=1)
    title: str = ""
    source: str | None = None
    format: str = Field("txt", pattern="^(txt|md)$")
    metadata: dict[str, Any] = Field(default_factory=dict)


class DocumentsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    documents: list[TextDocument] = Field(min_length=1, max_length=1000)


def json_body() -> dict:
    if not request.is_json:
        raise ApiError(415, "unsupported_media_type", "send a JSON body with Content-Type: application/json")
    try:
        body = request.get_json(silent=True)
    except RecursionError:  # the C parser's own guard, far deeper than MAX_JSON_DEPTH
        body = _TOO_DEEP
    if body is _TOO_DEEP or json_depth(body, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise ApiError(400, "invalid_json", f"the JSON body nests deeper than {MAX_JSON_DEPTH} levels")
    if body is None:
        raise ApiError(400, "invalid_json", "the request body is not valid JSON")
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_request", "the JSON body must be an object")
    if (found := surrogate_in(body)) is not None:
        where, code = found
        raise ApiError(400, "invalid_request", f"{where}: contains a lone surrogate ({code}), which no text "
                                               "encoding can hold; send valid Unicode")
    return body


def surrogate_in(value: Any) -> tuple[str, str] | None:
    """Where in a parsed JSON value (``filters.tags.0``, a key or a value) the first lone
    surrogate is, and which, or None."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            if (code := lone_surrogate(node)) is not None:
                return where or "body", code
        elif isinstance(node, dict):
            for key, child in node.items():
                path = f"{where}.{key}" if where else str(key)
                if (code := lone_surrogate(key)) is not None:
                    return f"{where or 'body'} (a key)", code
                stack.append((child, path))
        elif isinstance(node, list):
            stack.extend((child, f"{where}.{i}" if where else str(i)) for i, child in enumerate(node))
    return None


_TOO_DEEP = object()


def json_depth(value: Any, limit: int) -> int:
    """How deep ``value``'s arrays and objects nest (a scalar: 0), counted iteratively and
    stopping once past ``limit``."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest
