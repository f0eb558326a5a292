"""Record each document's facets (``kgrag.facets``: language, doc_type, tags, date) before it
is chunked; every chunk of the document carries them in its metadata.

Where each comes from, first found wins:

- ``doc_type``: the first ``metadata.doc_type_by_path`` glob matching the document's source
  (a folder mapping: ``{"policies/**": "policy"}``), the record or API field
  ``metadata.doc_type_field``, front matter ``doc_type:``, else the format (``pdf``,
  ``markdown`` ...).
- ``tags``: the record field ``metadata.tags_field``, front matter ``tags:``; else none.
- ``date``: the first of ``metadata.date_fields`` in the record that parses as a date
  (``date_source: "field"``), the same keys in front matter (``"front_matter"``), the file's
  modification time (``"mtime"``), else unknown (a document sent as JSON without a date).
- ``language``: detected from the text (``kgrag.facets.detect_language``).

Explicitly written facets (fields and front matter, not the mtime) are part of the document's
content hash: changing a record's tags re-ingests it, touching a file does not.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
from typing import Any

from kgrag.config import MetadataSettings
from kgrag.facets import (
    DATE,
    DATE_SOURCE,
    DOC_TYPE,
    DOC_TYPE_BY_FORMAT,
    LANGUAGE,
    TAGS,
    detect_language,
    parse_date,
    parse_tags,
)
from kgrag.ingest.loaders.base import content_hash
from kgrag.types import Document


def record_facets(doc: Document, settings: MetadataSettings) -> None:
    """Fill ``doc.facets`` and fold its explicit facets into ``doc.hash``; a document whose
    facets are already recorded is left as it is (the hash is folded once)."""
    if doc.facets:
        return
    fields = doc.metadata
    matter = doc.front_matter
    facets: dict[str, Any] = {}
    if (language := detect_language(doc.text)) is not None:
        facets[LANGUAGE] = language
    facets[DOC_TYPE] = _doc_type(doc, settings)
    tags = _first(parse_tags, (fields.get(settings.tags_field), matter.get(settings.tags_field)))
    if tags:
        facets[TAGS] = tags
    day, source = _date(doc, settings)
    if day is not None:
        facets[DATE], facets[DATE_SOURCE] = day.isoformat(), source
    explicit = {k: facets[k] for k in (TAGS, DATE) if k in facets and (k != DATE or source != "mtime")}
    if facets[DOC_TYPE] != DOC_TYPE_BY_FORMAT.get(doc.format, doc.format):
        explicit[DOC_TYPE] = facets[DOC_TYPE]
    if explicit:
        doc.hash = content_hash(doc.hash, json.dumps(explicit, sort_keys=True, ensure_ascii=False))
    doc.facets = facets


def _doc_type(doc: Document, settings: MetadataSettings) -> str:
    for pattern, doc_type in settings.doc_type_by_path.items():
        if fnmatch.fnmatchcase(doc.source, pattern) or fnmatch.fnmatchcase(doc.id, pattern):
            return doc_type
    for value in (doc.metadata.get(settings.doc_type_field), doc.front_matter.get(settings.doc_type_field)):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return DOC_TYPE_BY_FORMAT.get(doc.format, doc.format)


def _date(doc: Document, settings: MetadataSettings) -> tuple[dt.date | None, str]:
    for where, values in (("field", doc.metadata), ("front_matter", doc.front_matter)):
        for key in settings.date_fields:
            if (day := parse_date(values.get(key))) is not None:
                return day, where
    if doc.file_mtime is not None:
        return dt.datetime.fromtimestamp(doc.file_mtime, dt.UTC).date(), "mtime"
    return None, ""


def _first(parse, values):
    for value in values:
        if (parsed := parse(value)) is not None:
            return parsed
    return None
