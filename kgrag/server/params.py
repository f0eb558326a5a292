"""Query-string parameters as pydantic models: parsed once at the edge (a bad value is a 400
naming the parameter) and documented in the OpenAPI document from the same model."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar, get_args, get_origin

from flask import request
from pydantic import BaseModel, ConfigDict, Field

from kgrag.aliases.service import MAX_NAME_CHARS, NAME_PATTERN

MAX_LIMIT = 100
MAX_HOPS = 2
MAX_LIST = 1000


class _Params(BaseModel):
    model_config = ConfigDict(extra="ignore")  # unknown query parameters are ignored, as browsers add some


P = TypeVar("P", bound=_Params)


def query_params(model: type[P]) -> P:
    """The request's query string as ``model`` (raises pydantic's ValidationError → 400): a
    list field gets every value of its repeated parameter, any other field the first."""
    data: dict[str, Any] = {}
    for key in request.args:
        values = request.args.getlist(key)
        field = model.model_fields.get(key)
        data[key] = values if field is not None and _is_list(field.annotation) else values[0]
    return model.model_validate(data)


def _is_list(annotation: Any) -> bool:
    return get_origin(annotation) is list or any(_is_list(a) for a in get_args(annotation))


NOT_BLANK: dict[str, Any] = {"pattern": r"\S"}  # as kgrag.server.schemas.NOT_BLANK


class EntitySearchParams(_Params):
    q: str = Field(min_length=1, max_length=200, description="a name or alias, any case or script",
                   json_schema_extra=NOT_BLANK)
    limit: int = Field(20, ge=1, le=MAX_LIMIT)


class EntityParams(_Params):
    hops: int = Field(1, ge=1, le=MAX_HOPS, description="how far neighbours reach")
    limit: int = Field(20, ge=1, le=MAX_LIMIT, description="neighbours and chunks shown")


class RelationParams(_Params):
    a: str = Field(min_length=1, max_length=1000, description="one entity's key")
    b: str = Field(min_length=1, max_length=1000, description="the other entity's key (either direction)")
    limit: int = Field(20, ge=1, le=MAX_LIMIT, description="evidencing chunks shown")


class AliasListParams(_Params):
    entity: str | None = Field(None, max_length=200, json_schema_extra=NOT_BLANK)
    ambiguous: bool = False
    all: bool = False
    limit: int = Field(100, ge=1, le=MAX_LIST)
    offset: int = Field(0, ge=0, le=10**9)


class ShowParams(_Params):
    name: str = Field(min_length=1, max_length=200, json_schema_extra=NOT_BLANK)
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
    alias: list[Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS,
                                     json_schema_extra={"pattern": NAME_PATTERN})]] | None = Field(
        None, description="aliases to remove (repeat); or send them as the JSON body")


class ImportParams(_Params):
    force: bool = False
