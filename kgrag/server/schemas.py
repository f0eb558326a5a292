"""Request bodies, validated by pydantic: a bad field is a 400 naming the field."""

from __future__ import annotations

from typing import Any, Literal, get_args

from flask import request
from pydantic import BaseModel, ConfigDict, Field

from kgrag.retrieve.types import PATHS
from kgrag.server.errors import ApiError
from kgrag.stores.filters import SearchFilter

MAX_TOP_K = 100
PathName = Literal["dense", "bm25", "graph"]
assert set(get_args(PathName)) == set(PATHS), "PathName must list the retrieval paths"


class RetrieveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=4000)
    top_k: int | None = Field(None, ge=1, le=MAX_TOP_K)
    # Parsed here, once: a bad key or value is a 400 naming it (kgrag.stores.filters).
    filters: SearchFilter | None = None
    modes: list[PathName] | None = Field(None, min_length=1, description="retrieval paths to run (default: all)")
    rerank: bool = True

    def mode_tuple(self) -> tuple[str, ...] | None:
        return None if self.modes is None else tuple(dict.fromkeys(self.modes))


class QueryRequest(RetrieveRequest):
    stream: bool = False


class TextDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=512)
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
    body = request.get_json(silent=True)
    if body is None:
        raise ApiError(400, "invalid_json", "the request body is not valid JSON")
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_request", "the JSON body must be an object")
    return body
