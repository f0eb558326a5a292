"""Search filters: one typed, validated object, parsed once where a request comes in (the HTTP
request schema, ``kgrag query --filters``); the pipeline, the paths and the stores receive a
``SearchFilter`` and trust it.

Keys (the JSON object of ``"filters"`` in ``/v1/query`` and ``/v1/retrieve``):

- ``doc_id``: one document id, or a non-empty list of ids; a chunk matches when its ``doc_id``
  is one of them.
- ``source``: the chunk's source path, exact and case-sensitive.
- ``section_path_prefix``: a plain prefix of the chunk's section path (``"Guide / 2."``),
  case-sensitive, compared character by character: ``%``, ``_``, ``*``, ``?`` and ``\\`` are
  ordinary characters, never wildcards or escapes.
- ``language``, ``doc_type``: one value or a non-empty list (any of them); the document facets
  of ``kgrag.facets`` (``"zh"``, ``"en"``, ``"mixed"``; ``"pdf"``, ``"markdown"`` ...), exact.
- ``tags``: one tag or a non-empty list; a chunk matches when its document has ANY of them.
- ``date_from``, ``date_to``: ISO days (``"2023-01-01"``), inclusive; a chunk matches when its
  document's date lies in the range. ``date_from`` after ``date_to`` is an empty range and
  matches nothing (not refused: the request schema cannot state the order of two fields, and a
  request valid by the published schema is never a 400).

A chunk whose document lacks a facet (built before facets were recorded, or no date known)
passes no filter on that facet: unknown is never "in 2023" nor "a PDF".

Every key given must hold (AND). No filters, ``null`` or ``{}`` filter nothing. Refused, with
the field named (``InputError`` here, HTTP 400, CLI exit 2): an unknown key, a value of the
wrong type (``{"source": 5}``), a ``null`` value (ambiguous: "no filter" or "no value"?; leave
the key out instead), an empty ``doc_id`` list (it would match nothing: almost always a caller
that built the list from nothing), a filters value that is not an object.

``SearchFilter.matches(chunk)`` is the reference semantics: the pipeline applies it to hits
that only the graph found (the graph holds no chunk metadata), and each engine translates the
same object into its own query language (``kgrag.stores.sqlite.chunk_filters.filter_sql``,
``es_mapping.filter_clauses``). ``tests/contract/test_filter_contract.py`` checks that every
engine returns exactly the chunks ``matches`` keeps.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from kgrag.errors import InputError
from kgrag.facets import DOC_TYPE, LANGUAGE, chunk_date, chunk_tags
from kgrag.types import Chunk

FIELD = "filters"  # what the object is called in requests: error messages start with it


def _drop_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


# Default None, kept out of the JSON schema (where null is not an allowed value).
_LEFT_OUT = Field(None, json_schema_extra=_drop_default)
_DOC_ID_SCHEMA = {
    "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}],
    "description": "one document id, or a non-empty list of ids",
}


def _one_or_many(what: str) -> dict[str, Any]:
    return {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}],
            "description": f"one {what}, or a non-empty list (any of them)"}


def _iso_day(what: str) -> dict[str, Any]:
    return {"type": "string", "format": "date", "description": f"{what} (ISO day YYYY-MM-DD, inclusive)"}


class SearchFilter(BaseModel):
    """A validated search filter. ``doc_id`` holds the ids sorted and without repeats (one id
    given as a string is a one-element tuple); an empty ``SearchFilter()`` filters nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    # The JSON schemas (the OpenAPI document's) say what a request may send: None is the
    # Python default for "key left out", never a value a request may give.
    doc_id: Annotated[tuple[str, ...] | None, WithJsonSchema(_DOC_ID_SCHEMA)] = _LEFT_OUT
    source: Annotated[str | None, WithJsonSchema({"type": "string", "description": "exact source path"})] = _LEFT_OUT
    section_path_prefix: Annotated[str | None, WithJsonSchema(
        {"type": "string", "description": "a plain prefix of the section path"})] = _LEFT_OUT
    language: Annotated[tuple[str, ...] | None, WithJsonSchema(_one_or_many("language (zh, en, mixed, other)"))] = _LEFT_OUT
    doc_type: Annotated[tuple[str, ...] | None, WithJsonSchema(_one_or_many("document type (pdf, markdown ...)"))] = _LEFT_OUT
    tags: Annotated[tuple[str, ...] | None, WithJsonSchema(_one_or_many("tag"))] = _LEFT_OUT
    date_from: Annotated[str | None, WithJsonSchema(_iso_day("earliest document date"))] = _LEFT_OUT
    date_to: Annotated[str | None, WithJsonSchema(_iso_day("latest document date"))] = _LEFT_OUT

    @classmethod
    def parse(cls, raw: object) -> SearchFilter | None:
        """A request's ``filters`` value → a SearchFilter (None for no filters), or an
        InputError whose message names the offending key, e.g. ``filters.source: ...``."""
        if raw is None or isinstance(raw, SearchFilter):
            return raw
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            raise InputError(describe(exc, FIELD)) from None

    @model_validator(mode="before")
    @classmethod
    def _known_keys_only(cls, data: Any) -> Any:
        if isinstance(data, SearchFilter):
            return data
        if not isinstance(data, Mapping):
            raise PydanticCustomError(
                "filters_type",
                "expected an object with any of the keys {known}; got {got}",
                {"known": ", ".join(KEYS), "got": _kind(data)},
            )
        unknown = sorted(str(k) for k in data if k not in KEYS)
        if unknown:
            raise PydanticCustomError(
                "filters_key", "unknown filter key(s) {unknown}; known: {known}",
                {"unknown": ", ".join(map(repr, unknown)), "known": ", ".join(KEYS)},
            )
        return data

    @field_validator("doc_id", "language", "doc_type", "tags", mode="before")
    @classmethod
    def _one_or_many_ids(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str):
            return (value,)
        if isinstance(value, (list, tuple, set, frozenset)):
            if not value:
                raise PydanticCustomError(
                    "filters_empty", "an empty list matches nothing; leave the key out to search every document"
                )
            return tuple(value)
        what = "a document id or a non-empty list of ids" if info.field_name == "doc_id" else (
            "a string or a non-empty list of strings")
        raise PydanticCustomError("filters_doc_id", "expected {what}, got {got}", {"what": what, "got": _kind(value)})

    @field_validator("doc_id", "language", "doc_type", "tags")
    @classmethod
    def _sorted_ids(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else tuple(sorted(set(value)))

    @field_validator("date_from", "date_to", mode="before")
    @classmethod
    def _an_iso_day(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise PydanticCustomError("filters_str", "expected an ISO date string, got {got}", {"got": _kind(value)})
        try:
            day = dt.date.fromisoformat(value)
        except ValueError:
            day = None
        if day is None or len(value) != 10:
            raise PydanticCustomError("filters_date", "expected an ISO date YYYY-MM-DD, got {got}",
                                      {"got": _kind(value)})
        return value

    @field_validator("source", "section_path_prefix", mode="before")
    @classmethod
    def _a_string(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise PydanticCustomError("filters_str", "expected a string, got {got}", {"got": _kind(value)})
        return value

    # Defined last: "before" validators run last-defined first, so a null is named as such.
    @field_validator("*", mode="before")
    @classmethod
    def _no_nulls(cls, value: Any) -> Any:
        if value is None:
            raise PydanticCustomError("filters_null", "null is not a filter value; leave the key out")
        return value

    def matches(self, chunk: Chunk) -> bool:
        """The reference semantics: whether ``chunk`` passes every key given."""
        return (
            (self.doc_id is None or chunk.doc_id in self.doc_id)
            and (self.source is None or chunk.source == self.source)
            and (self.section_path_prefix is None or chunk.section_path.startswith(self.section_path_prefix))
            and (self.language is None or chunk.metadata.get(LANGUAGE) in self.language)
            and (self.doc_type is None or chunk.metadata.get(DOC_TYPE) in self.doc_type)
            and (self.tags is None or any(t in self.tags for t in chunk_tags(chunk.metadata)))
            and self._in_date_range(chunk_date(chunk.metadata))
        )

    def _in_date_range(self, day: str | None) -> bool:
        if self.date_from is None and self.date_to is None:
            return True
        return day is not None and (self.date_from is None or day >= self.date_from) and (
            self.date_to is None or day <= self.date_to)

    def merged(self, other: SearchFilter | None) -> SearchFilter:
        """Both filters at once (AND), for adding a question's constraints to a request's
        filters: a key only one gives is taken from it; a key both give keeps ``self``'s value
        (the request's: what the caller asked for explicitly wins over what was read from the
        question)."""
        if other is None:
            return self
        mine = self.model_dump(exclude_none=True)
        theirs = other.model_dump(exclude_none=True)
        return SearchFilter.model_validate({**theirs, **mine})

    def as_dict(self) -> dict[str, Any]:
        """The keys given, in request form (a single id as a string); ``parse`` reads it back."""
        out: dict[str, Any] = self.model_dump(exclude_none=True)
        for key in ("doc_id", "language", "doc_type", "tags"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value[0] if len(value) == 1 else list(value)
        return out


KEYS = tuple(SearchFilter.model_fields)


def describe(exc: ValidationError, root: str) -> str:
    """A pydantic error as ``root.key: message; ...`` (what the HTTP layer reports too)."""
    parts = []
    for err in exc.errors():
        where = ".".join([root, *(str(p) for p in err["loc"])])
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:120]
