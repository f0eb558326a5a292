"""Document facets: the per-document metadata every chunk carries for filtering — its natural
language, document type, tags and date. Shared by ingestion (which records them), the stores
(which filter on them) and answering (which reads a question's constraints against them), so
the keys, the date form and the language rule live here once, engine-free.

Every chunk of a document holds the same facets in ``Chunk.metadata``:

- ``language``: ``"zh"``, ``"en"``, ``"mixed"`` (both written at length), ``"other"`` (mainly
  another non-Latin script) — from the text (``detect_language``). ``"en"`` means "mainly
  Latin script": English, as far as a script count can tell.
- ``doc_type``: ``pdf``, ``docx``, ``markdown``, ``html``, ``text``, ``csv``, ``xlsx``, ``pptx``, ``email``, ``notebook``, ``jsonl``,
  ``code`` from the format, unless a record field or a path mapping names another
  (``MetadataSettings``).
- ``tags``: a list of strings (a record's ``tags`` field, front matter ``tags:``), maybe empty.
- ``date``: an ISO day ``YYYY-MM-DD``; ``date_source`` says where it came from: ``"field"``
  (a record or API field), ``"front_matter"``, ``"mtime"`` (the file's modification time).

A chunk without a facet (a knowledge base built before facets were recorded, a document with
no date) has it *unknown*: it passes no filter on that facet, and nothing fails.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from kgrag.text.patterns import YEAR
from kgrag.text.scripts import script_counts

LANGUAGE = "language"
DOC_TYPE = "doc_type"
TAGS = "tags"
DATE = "date"
DATE_SOURCE = "date_source"
KEYS = (LANGUAGE, DOC_TYPE, TAGS, DATE, DATE_SOURCE)

LANGUAGES = ("zh", "en", "mixed", "other")

# Format (Document.format) → doc_type: names a user types ("markdown", not "md").
DOC_TYPE_BY_FORMAT = {
    "txt": "text", "md": "markdown", "html": "html", "pdf": "pdf", "docx": "docx", "csv": "csv",
    "jsonl": "jsonl", "code": "code", "xlsx": "xlsx", "pptx": "pptx", "eml": "email", "ipynb": "notebook",
}

# Shares of Han in (Han characters + 2 × Latin words): one English word carries about what two
# Han characters do. At or above ZH the text is Chinese (a Chinese page quoting English names
# stays "zh"); at or below EN it is English (an English page citing a Chinese name stays "en").
ZH_SHARE = 0.7
EN_SHARE = 0.1
_SAMPLE = 20_000  # characters read: enough to decide, bounded for huge documents


def detect_language(text: str) -> str | None:
    """``"zh"``, ``"en"``, ``"mixed"`` or ``"other"`` by counting scripts in the first
    characters of ``text``; None when it has no letters at all."""
    han, words, other = script_counts(text[:_SAMPLE])
    latin = 2 * words
    if han + latin + other == 0:
        return None
    if other > han + latin:
        return "other"
    share = han / (han + latin)
    if share >= ZH_SHARE:
        return "zh"
    return "en" if share <= EN_SHARE else "mixed"


_YEAR = re.compile(rf"^{YEAR}$")
_YEAR_MONTH = re.compile(rf"^({YEAR})-(\d{{1,2}})$")


def parse_date(value: Any) -> dt.date | None:
    """A date written in a record field or front matter → a day; None when it is not one.

    Accepts a ``date``/``datetime`` (YAML front matter parses ISO dates itself), ISO strings
    (``2023-05-01``, ``2023-05-01T10:00:00Z``), ``YYYY-MM`` (its first day), ``YYYY`` or an
    integer year (January 1st). Nothing else: a free-form date would be a guess."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 1000 <= value <= 9999:
        return dt.date(value, 1, 1)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if _YEAR.match(text):
        return dt.date(int(text), 1, 1)
    if m := _YEAR_MONTH.match(text):
        try:
            return dt.date(int(m.group(1)), int(m.group(2)), 1)
        except ValueError:
            return None
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).date()
    except ValueError:
        return None


def parse_tags(value: Any) -> list[str] | None:
    """A tags value → a list of tags (stripped, in order, without repeats): a list of strings,
    or one string of comma-separated tags. None when it is neither."""
    if isinstance(value, str):
        items: list[Any] = value.split(",")
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        return None
    tags = [str(t).strip() for t in items if isinstance(t, (str, int, float)) and not isinstance(t, bool)]
    return list(dict.fromkeys(t for t in tags if t))


def chunk_date(metadata: dict[str, Any]) -> str | None:
    """The chunk's ISO day, or None when unknown (or not a string: never trusted blindly)."""
    value = metadata.get(DATE)
    return value if isinstance(value, str) and len(value) == 10 else None


def chunk_tags(metadata: dict[str, Any]) -> list[str]:
    value = metadata.get(TAGS)
    return [t for t in value if isinstance(t, str)] if isinstance(value, list) else []


@dataclass(frozen=True)
class FacetCatalog:
    """What the knowledge base's chunks carry: the distinct doc types and tags, and the span of
    their dates. Read by the question-constraint parser (``kgrag.retrieve.constraints``): a
    document type or tag it does not hold is never a constraint, and a date range outside the
    span would only hide everything."""

    doc_types: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()
    date_min: str | None = None
    date_max: str | None = None
    # the detected languages (``detect_language``): the ingestion job reads them to know
    # whether the knowledge base already holds Chinese (``kgrag.ingest.cross_lingual``)
    languages: frozenset[str] = frozenset()

    @property
    def dated(self) -> bool:
        return self.date_min is not None and self.date_max is not None

    def overlaps(self, start: str | None, end: str | None) -> bool:
        """Whether some stored date may fall in [start, end] (ISO days, either open)."""
        if not self.dated:
            return False
        assert self.date_min is not None and self.date_max is not None
        return (start is None or self.date_max >= start) and (end is None or self.date_min <= end)
