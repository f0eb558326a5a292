"""Constraints a question states about *which documents* to search — a date, a document type,
a tag — read once, LLM-free, into a ``SearchFilter`` (``kgrag.stores.filters``).

A wrong filter hides the answer, so the rules are conservative:

- **Dates** only when the phrasing constrains the documents, not the facts asked about: a
  document noun next to the year ("documents from 2023", "the 2023 reports", "news since 2022",
  "last year's reports", "2023年的新闻", "去年的文件"), or a rolling window that reads as one
  ("in the past year", "in the last 6 months", "最近一年", "近一年", "过去三个月"). "Who won the
  2023 Nobel prize?" and "2023年诺贝尔奖得主是谁？" are questions about 2023, not about
  documents dated 2023: no filter. "last year" / "去年" is the previous calendar year; "past
  year" / "最近一年" the 365 days up to today (``today`` is injected: tests fix it).
- **Document types** only for the format words ("in the PDFs", "from the Word files",
  "PDF 里", "PDF文件中") or a doc type the knowledge base holds followed by a document noun.
- **Tags** only for a tag the knowledge base holds, followed by a document noun ("the security
  docs", "安全相关的文档") or after "tagged" / "标签".
- Each is applied only when the knowledge base can satisfy it (``FacetCatalog``): a doc type or
  tag it holds, a date range its dated chunks overlap. Otherwise it is reported in the trace
  with the reason and ignored: a question about 2023 against undated documents searches them all.

Request filters and question constraints combine with AND; where both set the same key, the
request's value wins (``SearchFilter.merged``), and a combination that contradicts itself keeps
the request's filters alone.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kgrag.errors import InputError
from kgrag.facets import FacetCatalog
from kgrag.retrieve.background_cache import Refreshed
from kgrag.stores.filters import SearchFilter
from kgrag.text.patterns import YEAR

log = logging.getLogger(__name__)

_NOUN_EN = (r"(?:documents?|docs?|files?|articles?|news|reports?|papers?|pages?|posts?|records?|"
            r"entries|notes|memos?|stories|materials?|minutes)")
# Next to a date: plural only. "the 2023 report", "a paper in 2023" more often name one document
# (or thing) the question is about than a set of documents to search.
_NOUNS_EN = r"(?:documents|docs|files|articles|news|reports|records|notes|memos|minutes)"
_NOUN_ZH = r"(?:文件|文档|资料|新闻|报道|文章|报告|记录|材料|消息|公告|纪要)"
_YEAR = rf"(?P<year>{YEAR})"
_VERB_EN = r"(?:(?:published|written|dated|issued|created|updated|added)\s+)?"

# (pattern, kind): kind says how the match becomes a date range.
_DATE_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b{_NOUNS_EN}\s+{_VERB_EN}(?:from|in|of|dated|during)\s+(?:the\s+year\s+)?{_YEAR}\b", re.I), "year"),
    (re.compile(rf"\b(?:(?:in|from)\s+)?(?:the\s+|our\s+)?{_YEAR}(?:'s)?\s+{_NOUNS_EN}\b", re.I), "year"),
    (re.compile(rf"\b{_NOUNS_EN}\s+{_VERB_EN}(?:since|from)\s+{_YEAR}\s+(?:on|onwards?)\b", re.I), "since"),
    (re.compile(rf"\b{_NOUNS_EN}\s+{_VERB_EN}since\s+{_YEAR}\b", re.I), "since"),
    (re.compile(rf"\b{_NOUNS_EN}\s+{_VERB_EN}after\s+{_YEAR}\b", re.I), "after"),
    (re.compile(rf"\b{_NOUNS_EN}\s+{_VERB_EN}before\s+{_YEAR}\b", re.I), "before"),
    (re.compile(rf"\blast\s+year'?s\s+{_NOUNS_EN}\b|\b{_NOUNS_EN}\s+{_VERB_EN}(?:from|of)\s+last\s+year\b", re.I),
     "last_year"),
    (re.compile(rf"\bthis\s+year'?s\s+{_NOUNS_EN}\b|\b{_NOUNS_EN}\s+{_VERB_EN}(?:from|of)\s+this\s+year\b", re.I),
     "this_year"),
    (re.compile(r"\b(?:in|from|during|over|within)\s+the\s+(?:last|past)\s+(?:year|12\s+months|twelve\s+months)\b",
                re.I), "past_year"),
    (re.compile(r"\b(?:in|from|during|over|within)\s+the\s+(?:last|past)\s+(?P<n>\d{1,3})\s+"
                r"(?P<unit>days|weeks|months|years)\b", re.I), "past_n"),
    (re.compile(rf"{_YEAR}\s*年度?(?:的|发布的|发表的|出版的)?{_NOUN_ZH}"), "year"),
    (re.compile(rf"{_YEAR}\s*年(?:以来|之后|以后|起)的?{_NOUN_ZH}"), "since"),
    (re.compile(rf"去年(?:的|发布的|发表的)?{_NOUN_ZH}"), "last_year"),
    (re.compile(rf"今年(?:的|发布的|发表的)?{_NOUN_ZH}"), "this_year"),
    (re.compile(r"(?:最近|近|过去)(?:一|1)年(?:来|内|以来)?"), "past_year"),
    (re.compile(r"(?:最近|近|过去)(?P<n>[1-9]|[一二三四五六七八九十]|十[一二])个?(?P<unit>月|天|周|星期)(?:来|内|以来)?"),
     "past_n"),
]
_ZH_NUMBERS = {c: i for i, c in enumerate("一二三四五六七八九十", start=1)} | {"十一": 11, "十二": 12}
_DAYS_PER = {"days": 1, "weeks": 7, "months": 30, "years": 365, "天": 1, "周": 7, "星期": 7, "月": 30}

# Format words → doc_type (kgrag.facets.DOC_TYPE_BY_FORMAT's values).
_FORMAT_WORDS = {"pdf": "pdf", "word": "docx", "docx": "docx", "markdown": "markdown", "md": "markdown",
                 "html": "html", "csv": "csv", "jsonl": "jsonl", "text": "text", "txt": "text", "网页": "html",
                 "excel": "xlsx", "xlsx": "xlsx", "spreadsheet": "xlsx", "powerpoint": "pptx", "pptx": "pptx",
                 "slide": "pptx", "ppt": "pptx", "email": "email", "e-mail": "email", "mail": "email",
                 "邮件": "email", "notebook": "notebook", "ipynb": "notebook"}
_FILE_NOUN_EN = r"(?:s|\s+(?:files?|documents?|docs?|pages?))?"
_DOC_TYPE_EN = re.compile(
    r"\b(?:in|from|among|within|across|of)\s+(?:the\s+|our\s+|my\s+|all\s+(?:the\s+)?)?"
    rf"(?P<t>pdf|word|docx|markdown|html|csv|txt|excel|xlsx|spreadsheet|powerpoint|pptx|slide|e-?mail|mail|notebook|ipynb){_FILE_NOUN_EN}"
    r"(?=\s*(?:[?.!,;:]|$|\b(?:about|on|for|regarding|that|which|what|where|how|when|who|say|says|mention)\b))",
    re.I)
_DOC_TYPE_ZH = re.compile(r"(?P<t>PDF|pdf|Word|word|Excel|excel|PPT|ppt|邮件|Markdown|markdown|HTML|html|网页)\s*(?:文件|文档)?\s*(?:里面|里|中|当中|内)")


@dataclass
class Constraint:
    """One constraint found in the question, whether applied or not (and why)."""

    text: str  # as written
    facet: str  # "date" | "doc_type" | "tags"
    value: dict[str, Any]  # the filter keys it sets
    applied: bool = False
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "facet": self.facet, "value": self.value, "applied": self.applied,
                "reason": self.reason}


@dataclass
class Constraints:
    found: list[Constraint] = field(default_factory=list)
    filter: SearchFilter | None = None  # what the applied constraints filter, alone

    @property
    def spans(self) -> list[str]:
        return [c.text for c in self.found if c.applied]


def read_constraints(question: str, catalog: Callable[[], FacetCatalog | None], today: dt.date) -> Constraints:
    """The constraints ``question`` states; ``catalog`` (called only when one is found) says what
    the knowledge base's documents carry."""
    found = _dates(question, today) + _doc_types(question)
    if not found and not _may_name_tag(question):
        return Constraints()
    known = catalog()
    if known is None:
        for c in found:
            c.reason = "the chunk store lists no document metadata"
        return Constraints(found)
    found += _tags(question, known)
    keys: dict[str, Any] = {}
    for c in found:
        c.applied, c.reason = _satisfiable(c, known)
        if c.applied and not any(k in keys for k in c.value):  # the first of each kind wins
            keys.update(c.value)
        elif c.applied:
            c.applied, c.reason = False, "an earlier constraint of the question sets it"
    try:
        return Constraints(found, SearchFilter.parse(keys) if keys else None)
    except InputError as exc:  # e.g. "since 2025" with "before 2020": contradictory, drop all
        for c in found:
            c.applied, c.reason = False, f"contradictory constraints ({exc})"
        return Constraints(found)


def merge_filters(request: SearchFilter | None, question: SearchFilter | None) -> SearchFilter | None:
    """The request's filters AND the question's constraints; a key both set keeps the
    request's value; a contradiction (an empty date range) keeps the request's filters."""
    if question is None:
        return request
    if request is None:
        return question
    merged = request.merged(question)
    if merged.date_from is not None and merged.date_to is not None and merged.date_from > merged.date_to:
        return request  # the two ranges do not meet: the question's reading is the doubtful one
    return merged


def _dates(question: str, today: dt.date) -> list[Constraint]:
    out = []
    taken: list[tuple[int, int]] = []
    for pattern, kind in _DATE_RULES:
        for m in pattern.finditer(question):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            value = _date_range(kind, m, today)
            if value:
                taken.append(m.span())
                out.append(Constraint(m.group(0).strip(), "date", value))
    return out


def _date_range(kind: str, m: re.Match[str], today: dt.date) -> dict[str, str]:
    groups = m.groupdict()
    year = int(groups["year"]) if groups.get("year") else None
    if kind == "year" and year:
        return {"date_from": f"{year}-01-01", "date_to": f"{year}-12-31"}
    if kind == "since" and year:
        return {"date_from": f"{year}-01-01"}
    if kind == "after" and year:
        return {"date_from": f"{year + 1}-01-01"}
    if kind == "before" and year:
        return {"date_to": f"{year - 1}-12-31"}
    if kind == "last_year":
        return {"date_from": f"{today.year - 1}-01-01", "date_to": f"{today.year - 1}-12-31"}
    if kind == "this_year":
        return {"date_from": f"{today.year}-01-01", "date_to": today.isoformat()}
    if kind == "past_year":
        return {"date_from": (today - dt.timedelta(days=365)).isoformat(), "date_to": today.isoformat()}
    if kind == "past_n":
        raw = groups["n"]
        n = int(raw) if raw.isdigit() else _ZH_NUMBERS.get(raw, 0)
        days = n * _DAYS_PER[groups["unit"].lower()]
        if 0 < days <= 366 * 20:
            return {"date_from": (today - dt.timedelta(days=days)).isoformat(), "date_to": today.isoformat()}
    return {}


def _doc_types(question: str) -> list[Constraint]:
    out = []
    for pattern in (_DOC_TYPE_EN, _DOC_TYPE_ZH):
        for m in pattern.finditer(question):
            doc_type = _FORMAT_WORDS[m.group("t").lower()]
            out.append(Constraint(m.group(0).strip(), "doc_type", {"doc_type": doc_type}))
    return out


def _may_name_tag(question: str) -> bool:
    """Cheap pre-check before the catalog is read: a document noun or a tag cue."""
    return re.search(rf"\b{_NOUN_EN}\b|tagged|\btag\b|标签|{_NOUN_ZH}", question, re.I) is not None


def _tags(question: str, catalog: FacetCatalog) -> list[Constraint]:
    out: list[Constraint] = []
    for tag in sorted(catalog.tags, key=len, reverse=True):
        if len(tag) < 2 or len(tag) > 60:
            continue
        t = re.escape(tag)
        en = rf"(?<![\w-]){t}\s+{_NOUN_EN}\b|\btagged\s+(?:with\s+)?[\"'“]?{t}(?![\w-])|\btag\s+[\"'“]?{t}(?![\w-])"
        zh = rf"{t}\s*(?:相关的?|类的?|方面的?)?{_NOUN_ZH}|标签(?:为|是)?\s*[\"“「]?{t}"
        m = re.search(f"{en}|{zh}", question, re.I)
        if m and not any(c.value["tags"] == [tag] for c in out):
            out.append(Constraint(m.group(0).strip(), "tags", {"tags": [tag]}))
    return out[:1]  # one tag: two names found in one question are more likely content than constraints


def _satisfiable(c: Constraint, catalog: FacetCatalog) -> tuple[bool, str]:
    if c.facet == "date":
        if not catalog.dated:
            return False, "the documents carry no dates"
        if not catalog.overlaps(c.value.get("date_from"), c.value.get("date_to")):
            return False, f"no document is dated in that range (dates span {catalog.date_min} to {catalog.date_max})"
        return True, "documents are dated in that range"
    if c.facet == "doc_type":
        if c.value["doc_type"] not in catalog.doc_types:
            return False, f"the knowledge base holds no {c.value['doc_type']} documents"
        return True, "the knowledge base holds documents of that type"
    return True, "a tag of the knowledge base's documents"


class CatalogCache:
    """``chunk_index.facet_catalog()``, kept and refreshed in the background once older than
    ``ttl_s`` seconds (``background_cache.Refreshed``; a question reads it only when it states a
    constraint); None when the store cannot list facets or the read fails — then no
    constraint applies, and the search goes on unfiltered."""

    def __init__(self, chunk_index: object, ttl_s: float = 30.0):
        read = getattr(chunk_index, "facet_catalog", None)
        # Held in a tuple: "no catalog" is a value to keep, not a reason to read again.
        self._held: Refreshed[tuple[FacetCatalog | None]] = Refreshed(
            lambda _previous: (_read_catalog(read),), ttl_s, "kgrag-facet-catalog")

    def __call__(self) -> FacetCatalog | None:
        return self._held.get()[0]

    def invalidate(self) -> None:
        self._held.invalidate()


def _read_catalog(read: Callable[[], FacetCatalog] | None) -> FacetCatalog | None:
    if read is None:
        return None
    try:
        return read()
    except Exception:  # a store error must not fail the question: no constraints
        log.warning("reading the facet catalog failed", exc_info=True)
        return None
