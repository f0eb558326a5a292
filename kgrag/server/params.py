"""Query-string parameters as pydantic models: parsed once at the edge (a bad value is a 400
naming the parameter) and documented in the OpenAPI document from the same model."""

from __future__ import annotations

from typing import TypeVar

from flask import request
from pydantic import BaseModel, ConfigDict, Field

MAX_LIMIT = 100
MAX_HOPS = 2
MAX_LIST = 1000


class _Params(BaseModel):
    model_config = ConfigDict(extra="ignore")  # unknown query parameters are ignored, as browsers add some


P = TypeVar("P", bound=_Params)


def query_params(model: type[P]) -> P:
    """The request's query string as ``model`` (raises pydantic's ValidationError → 400)."""
    return model.model_validate(request.args.to_dict())


class EntitySearchParams(_Params):
    q: str = Field(min_length=1, max_length=200, description="a name or alias, any case or script")
    limit: int = Field(20, ge=1, le=MAX_LIMIT)


class EntityParams(_Params):
    hops: int = Field(1, ge=1, le=MAX_HOPS, description="how far neighbours reach")
    limit: int = Field(20, ge=1, le=MAX_LIMIT, description="neighbours and chunks shown")


class RelationParams(_Params):
    a: str = Field(min_length=1, max_length=1000, description="one entity's key")
    b: str = Field(min_length=1, max_length=1000, description="the other entity's key (either direction)")
    limit: int = Field(20, ge=1, le=MAX_LIMIT, description="evidencing chunks shown")


class AliasListParams(_Params):
    entity: str | None = Field(None, max_length=200)
    ambiguous: bool = False
    all: bool = False
    limit: int = Field(100, ge=1, le=MAX_LIST)
    offset: int = Field(0, ge=0, le=10**9)


class ShowParams(_Params):
    name: str = Field(min_length=1, max_length=200)
    neighbours: int = Field(10, ge=1, le=100)


class SuggestParams(_Params):
    embeddings: bool = True
    limit: int = Field(30, ge=1, le=500)
    max_entities: int = Field(2000, ge=2, le=20000)


class AuditParams(_Params):
    limit: int = Field(50, ge=1, le=MAX_LIST)


class ExportParams(_Params):
    all: bool = False


class RemoveAliasParams(_Params):
    alias: list[str] | None = Field(None, description="aliases to remove (repeat); or send them as the JSON body")


class ImportParams(_Params):
    force: bool = False
