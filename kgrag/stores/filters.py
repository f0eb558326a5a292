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

Every key given must hold (AND). No filters, ``null`` or ``{}`` filter nothing. Refused, with
the field named (``InputError`` here, HTTP 400, CLI exit 2): an unknown key, a value of the
wrong type (``{"source": 5}``), a ``null`` value (ambiguous: "no filter" or "no value"?; leave
the key out instead), an empty ``doc_id`` list (it would match nothing: almost always a caller
that built the list from nothing), a filters value that is not an object.

``SearchFilter.matches(chunk)`` is the reference semantics: the pipeline applies it to hits
that only the graph found (the graph holds no chunk metadata), and each engine translates the
same object into its own query language (``sqlite_chunks.filter_sql``,
``es_mapping.filter_clauses``). ``tests/contract/test_filter_contract.py`` checks that every
engine returns exactly the chunks ``matches`` keeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema, field_validator, model_validator
from pydantic_core import PydanticCustomError

from kgrag.errors import InputError
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

    @field_validator("doc_id", mode="before")
    @classmethod
    def _one_or_many_ids(cls, value: Any) -> Any:
        if isinstance(value, str):
            return (value,)
        if isinstance(value, (list, tuple, set, frozenset)):
            if not value:
                raise PydanticCustomError(
                    "filters_empty", "an empty list matches nothing; leave the key out to search every document"
                )
            return tuple(value)
        raise PydanticCustomError(
            "filters_doc_id", "expected a document id or a non-empty list of ids, got {got}", {"got": _kind(value)}
        )

    @field_validator("doc_id")
    @classmethod
    def _sorted_ids(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else tuple(sorted(set(value)))

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
        )

    def as_dict(self) -> dict[str, Any]:
        """The keys given, in request form (a single id as a string); ``parse`` reads it back."""
        out: dict[str, Any] = self.model_dump(exclude_none=True)
        if self.doc_id is not None:
            out["doc_id"] = self.doc_id[0] if len(self.doc_id) == 1 else list(self.doc_id)
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
