"""The chunk index's facets in SQL: a SearchFilter → a condition over the ``chunks`` table (alias
``c``), and the catalog of the facet values it holds."""

from __future__ import annotations

import sqlite3
from typing import Any

from kgrag.facets import DATE, DOC_TYPE, LANGUAGE, TAGS, FacetCatalog
from kgrag.stores.filters import SearchFilter
from kgrag.stores.sqlite.db import IN_JSON, id_list


def filter_sql(filters: SearchFilter | None) -> tuple[str, list[Any]]:
    """A SearchFilter → an SQL condition on alias ``c`` (chunks) with bound parameters ("" for
    none): what ``SearchFilter.matches`` keeps."""
    if filters is None:
        return "", []
    clauses: list[str] = []
    params: list[Any] = []
    if filters.doc_id is not None:
        if len(filters.doc_id) == 1:
            clauses.append("c.doc_id = ?")
            params.append(filters.doc_id[0])
        else:
            clauses.append(f"c.doc_id {IN_JSON}")
            params.append(id_list(filters.doc_id))
    if filters.section_path_prefix is not None:
        # substr, not LIKE: LIKE folds ASCII case and reads % and _ as wildcards. Both count
        # characters (code points) like Python's len, so CJK prefixes compare whole characters.
        clauses.append("substr(c.section_path, 1, ?) = ?")
        params += [len(filters.section_path_prefix), filters.section_path_prefix]
    if filters.source is not None:
        clauses.append("c.source = ?")
        params.append(filters.source)
    # Facets live in the metadata JSON (kgrag.facets): no schema change, so a file written
    # before they were recorded is read as it is, its chunks' facets unknown (NULL: no match).
    for key in (LANGUAGE, DOC_TYPE):
        values = getattr(filters, key)
        if values is not None:
            clauses.append(f"json_type(c.metadata, '$.{key}') = 'text' AND json_extract(c.metadata, '$.{key}') {IN_JSON}")
            params.append(id_list(values))
    if filters.tags is not None:
        # json_each of a plain string yields the string: only an array holds tags.
        clauses.append(
            f"json_type(c.metadata, '$.{TAGS}') = 'array' AND EXISTS (SELECT 1 FROM "
            f"json_each(c.metadata, '$.{TAGS}') t WHERE t.type = 'text' AND t.value {IN_JSON})"
        )
        params.append(id_list(filters.tags))
    if filters.date_from is not None or filters.date_to is not None:
        # ISO days compare as strings; a date that is not a 10-character string is unknown.
        day = f"json_extract(c.metadata, '$.{DATE}')"
        clauses.append(f"json_type(c.metadata, '$.{DATE}') = 'text' AND length({day}) = 10")
        if filters.date_from is not None:
            clauses.append(f"{day} >= ?")
            params.append(filters.date_from)
        if filters.date_to is not None:
            clauses.append(f"{day} <= ?")
            params.append(filters.date_to)
    return " AND ".join(clauses), params


def read_facet_catalog(conn: sqlite3.Connection) -> FacetCatalog:
    """The distinct doc types, tags and languages of the searchable chunks and the span of
    their dates (``kgrag.facets.FacetCatalog``); one scan of the metadata column each."""
    doc_types, languages = ({r[0] for r in conn.execute(
        f"SELECT DISTINCT json_extract(metadata, '$.{key}') FROM chunks "
        f"WHERE is_parent = 0 AND json_type(metadata, '$.{key}') = 'text'")} for key in (DOC_TYPE, LANGUAGE))
    tags = {r[0] for r in conn.execute(
        f"SELECT DISTINCT t.value FROM chunks c, json_each(c.metadata, '$.{TAGS}') t "
        f"WHERE c.is_parent = 0 AND json_type(c.metadata, '$.{TAGS}') = 'array' AND t.type = 'text'")}
    low, high = conn.execute(
        f"SELECT min(json_extract(metadata, '$.{DATE}')), max(json_extract(metadata, '$.{DATE}')) "
        f"FROM chunks WHERE is_parent = 0 AND json_type(metadata, '$.{DATE}') = 'text' "
        f"AND length(json_extract(metadata, '$.{DATE}')) = 10").fetchone()
    return FacetCatalog(frozenset(doc_types), frozenset(tags), low, high, frozenset(languages))
