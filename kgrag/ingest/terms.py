"""Domain terms and document structure without an LLM: what a team's own documents are about.

spaCy's news-trained NER sees people, places and companies; a handbook's questions hinge on
roles, teams, channels, processes, tools and defined terms ("E-Group", "#ciso", "fiscal
quarter"), and NER alone leaves the graph path little to walk (docs/decisions.md, "Domain terms
and structure"). This module finds, per chunk:

* **defined terms** — "Chief Information Security Officer (CISO)" and "CFO, or Chief Financial
  Officer," (the two spellings become aliases of one entity, so an acronym resolves), "X is/are
  a/an/the …" at the start of a sentence, bold definition-list entries ("**Term**: …") and
  glossary-like table rows (a short first cell, a sentence in the second);
* **identifiers** — ``#channel``, ``@handle``, ``snake_case``, ``CamelCase``, hyphenated names
  ("E-Group", "VP-Directs"), all-capital acronyms and short ``code`` spans;
* **noun phrases** — spaCy noun chunks (the parser of the same small English pipeline) of two
  to five words, trimmed of determiners and generic modifiers, kept when they recur in two
  documents of a batch, are already known, or hold a proper noun;
* **table entries** — the short cells of a Markdown table row;

and per document the structure: the section is PART_OF its parent section (titles
"Page > H2 > H3"), a defined term is DEFINED_IN its section, the entries of a table row are one
ROW (a role and its channel, a division and its output), a Markdown/HTML link LINKS_TO the page
it points at (resolved by path suffix among the pages seen, so site-absolute and relative
links both resolve), an acronym is an ALIAS_OF its long form when both were already
separate entities, and a role title LEADS the unit it names (``kgrag.ingest.role_titles``).

Encyclopedic prose (Wikipedia-style passages) is left to NER: with ``terms="auto"`` (the
default) only documents that carry Markdown/HTML structure (headings, lists, tables, links,
or a section title) get terms, so the Wikipedia-style sets ingest exactly as before and at the
same speed (the parser only loads when such a document arrives).
"""

from __future__ import annotations

import posixpath
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from kgrag.ingest.role_titles import LEADS_WEIGHT, role_titles
from kgrag.lexicon.gazetteer import english_stop_words, matchable
from kgrag.lexicon.headings import heading_name, path_names
from kgrag.lexicon.titles import section_path_parts
from kgrag.models.ner import Span
from kgrag.text.markdown_tables import SEPARATOR_CELL, TABLE_LINE, header_indices
from kgrag.text.normalize import normalize_alias
from kgrag.text.scripts import HAN
from kgrag.text.sentences import in_fenced_block
from kgrag.types import (
    ALIAS_OF,
    DEFINED_IN,
    DEFINED_TERM,
    IDENTIFIER,
    LEADS,
    LINKS_TO,
    PART_OF,
    ROW,
    SECTION,
    TABLE_ENTRY,
    TERM,
    Chunk,
)

# Relation weights: the walk passes w / (w + 1) of a score over an edge (``retrieve.paths``), so
# an alias passes 75%, a table row 67%, one co-occurrence or a structural edge 50%, a link 33%.
WEIGHTS = {ALIAS_OF: 3.0, ROW: 2.0, LEADS: LEADS_WEIGHT, DEFINED_IN: 1.0, PART_OF: 1.0, LINKS_TO: 0.5}
MAX_PHRASE_WORDS = 5
MAX_ENTRY_WORDS = 8
MAX_CODE_CHARS = 40

_STRUCTURE = re.compile(r"^(?:#{1,6} |\s*[-*+] |\s*\d+\. |\|.*\|)|\]\(|<a\s+href=", re.M)
# Markup replaced by spaces (same length, offsets hold) before parsing.
_MARKUP = re.compile(r"\]\([^)\n]*\)|<[^>\n]{1,200}>|https?://\S+|[|*`#\[\]_>]")
_URLISH = re.compile(r"\]\([^)\n]*\)|https?://\S+|<[^>\n]{1,200}>")
_IDENTIFIERS = [
    re.compile(r"(?<![\w/#(&])#[a-z0-9][a-z0-9_-]{1,40}"),  # #channel
    re.compile(r"(?<![\w@.])@[a-zA-Z0-9][\w-]{1,40}"),  # @handle
    re.compile(r"(?<![\w/.:-])[a-z][a-z0-9]*_[a-z0-9_]*(?!:)"),  # snake_case, proj_ (not :emoji_name:)
    re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b"),  # CamelCase
    re.compile(r"\b[A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+\b"),  # E-Group, VP-Directs
    re.compile(r"\b[A-Z][A-Z0-9&]{1,9}\b"),  # CISO, G&A
]
# Markup a name never contains: a span holding one of these is cut from a link or a table cell.
_MARKUP_CHARS = frozenset("[]()<>*|`")
# Link targets and HTML tags, blanked (same length) before NER reads a structured document:
# without this spaCy reads "GitLab docs](https://docs.gitlab.com" as one organisation.
_NER_NOISE = re.compile(r"\]\([^)\n]*\)|<[^>\n]{1,200}>|\*\*|`|\[")
_CODE = re.compile(rf"`([^`\n]{{2,{MAX_CODE_CHARS}}})`")
_CAP_WORDS = r"[A-Z][\w&'’-]*(?:\s+(?:(?:of|and|for|the|&|to)\s+)?[A-Z][\w&'’-]*){1,7}"
_LONG_ACRONYM = re.compile(rf"({_CAP_WORDS})\s+\(([A-Z][A-Za-z&]{{1,9}})\)")
_ACRONYM_OR_LONG = re.compile(rf"\b([A-Z][A-Za-z&]{{1,9}}),?\s+or\s+({_CAP_WORDS})\s*[,)]")
# A Chinese term with its English name (and abbreviation) in brackets, as Chinese technical
# writing defines a term: "管理员（Administrator）", "用户权限模型（Role-Based Access Control，简称
# RBAC）", "双因素认证（2FA）". The Han run before the bracket holds the clause too ("说明 … 的用户
# 权限模型"): the term is what follows its last function character (``_HAN_CLAUSE``).
_BILINGUAL = re.compile(rf"([{HAN}]{{2,40}})\s*[（(]\s*([A-Za-z0-9][A-Za-z0-9&'’./ -]{{0,60}}?)\s*"
                        rf"(?:[，,、;；]\s*(?:简称|缩写|即|or\s+)?\s*([A-Z][A-Za-z0-9&-]{{1,11}}))?\s*[）)]")
_HAN_CLAUSE = re.compile(r"^.*[的是在和与或及把对将了为从向被让给由以于也都即称叫说中]")
MAX_HAN_TERM = 8
_IS_A = re.compile(
    r"(?:^|(?<=[.!?]\s)|(?<=\n))(?:[-*+]\s+)?(?:\*\*)?(?:The\s+)?"
    r"([A-Z][\w&'’-]*(?:[ -][\w&'’-]+){0,4}?)(?:\*\*)?\s+(?:is|are|means|refers to)\s+"
    r"(?:a|an|the|our|any|all)\b"
)
_BOLD_DEFINITION = re.compile(r"^\s*(?:[-*+]\s+)?\*\*([^*\n]{2,60}?):?\*\*\s*(?:[:–—-]\s+)?\S", re.M)
_CELL_LINK = re.compile(r"\[([^\]\n]+)\]\([^)\n]*\)")
_CELL_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)[^)]*\)|href=[\"']([^\"']+)[\"']")
_HEADING_LINE = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
_INDEX_PAGES = {"_index", "index", "readme"}
# Noun-phrase words that make a phrase generic rather than a term ("other teams", "a few days").
_GENERIC = frozenset(
    "other such same various many several new own each every all some more most few any "
    "certain specific different following example additional particular good better best "
    "great strong strongest right related relevant helpful limited general respective leading "
    "simple important current main key possible appropriate necessary usual".split()
)
_TRIM_POS = frozenset({"DET", "PRON", "NUM", "PART", "PUNCT", "SPACE", "CCONJ", "ADP", "SYM", "X"})


@dataclass(frozen=True)
class Link:
    """A structural relation between two names (resolved to entity keys by the extractor),
    evidenced by one chunk of the document."""

    source: str
    target: str
    type: str
    chunk_id: str

    @property
    def weight(self) -> float:
        return WEIGHTS.get(self.type, 1.0)


@dataclass
class DocumentTerms:
    """The terms of one document: spans per chunk, alias pairs, structural links, and the
    names the first chunk is about without spelling them (its parent sections)."""

    spans: list[list[Span]]
    aliases: list[tuple[str, str]] = field(default_factory=list)  # (short form, long form)
    links: list[Link] = field(default_factory=list)
    context: list[tuple[str, str]] = field(default_factory=list)  # (name, type) in the first chunk
    defined: set[str] = field(default_factory=set)  # the terms it defines, normalized

    def defines(self, name: str) -> bool:
        """Whether the document defines ``name`` as a term (a heading of words for a part of a
        text, "定义", still names its section then: ``kgrag.lexicon.headings``)."""
        return normalize_alias(name) in self.defined


def looks_structured(chunks: Sequence[Chunk]) -> bool:
    """Markdown/HTML structure or a section title: a team's document, not encyclopedic prose."""
    return any(" > " in c.title or _STRUCTURE.search(c.text) for c in chunks)


def acronym_matches(acronym: str, long_form: str) -> bool:
    """Whether the capitals of ``acronym`` are the initials of ``long_form``'s capitalized words
    ("CISO" / "Chief Information Security Officer", "CProdO" / "Chief Product Officer")."""
    capitals = [c for c in acronym if c.isupper()]
    initials = [w[0] for w in re.split(r"[\s-]+", long_form) if w[:1].isupper()]
    return len(capitals) >= 2 and capitals == initials


def _acronym_suffix(acronym: str, long_form: str) -> str | None:
    """The shortest tail of ``long_form`` that ``acronym`` abbreviates ("The Chief People
    Officer" → "Chief People Officer"), or None."""
    words = long_form.split()
    for i in range(len(words)):
        tail = " ".join(words[i:])
        if acronym_matches(acronym, tail):
            return tail
    return None


class TermExtractor:
    """Terms and structure of documents' chunks (see the module docstring). ``mode``: "auto"
    (structured documents only), "on" (every document); ``structure`` adds the relations."""

    def __init__(self, spacy_model: str, mode: str = "auto", structure: bool = True):
        self.spacy_model = spacy_model
        self.mode = mode
        self.structure = structure
        self._nlp: Any = None  # the spaCy parser pipeline, loaded on the first structured document
        self._lock = threading.Lock()
        self._stop = english_stop_words()
        self._known_phrases: set[str] = set()
        # page path suffix → page title (None: two pages share the suffix); links to pages not
        # seen yet wait in _pending until their page arrives.
        self._pages: dict[tuple[str, ...], str | None] = {}
        self._pending: dict[tuple[str, ...], list[str]] = {}

    def chosen(self, chunks: Sequence[Chunk]) -> bool:
        """Whether this document gets terms (and markup-free text for NER)."""
        return self.mode == "on" or (self.mode == "auto" and looks_structured(chunks))

    def extract(self, documents: Sequence[Sequence[Chunk]]) -> list[DocumentTerms]:
        """Terms of each document's chunks, in order; noun phrases recur across the batch."""
        chosen = [self.chosen(d) for d in documents]
        phrases = self._noun_phrases([c.text for d, on in zip(documents, chosen, strict=True) if on for c in d])
        recurring = self._recurring(documents, chosen, phrases)
        out = []
        offset = 0
        for chunks, on in zip(documents, chosen, strict=True):
            if not on:
                out.append(DocumentTerms([[] for _ in chunks]))
                continue
            doc_phrases = phrases[offset : offset + len(chunks)]
            offset += len(chunks)
            out.append(self._document(chunks, doc_phrases, recurring))
        return out

    # -- noun phrases ----------------------------------------------------------------------
    def _parser(self):
        with self._lock:
            if self._nlp is None:
                import spacy

                self._nlp = spacy.load(self.spacy_model, exclude=["ner", "lemmatizer"])
            return self._nlp

    def _noun_phrases(self, texts: list[str]) -> list[list[Span]]:
        if not texts:
            return []
        nlp = self._parser()
        masked = [_MARKUP.sub(lambda m: " " * (m.end() - m.start()), t) for t in texts]
        out = []
        with self._lock:
            for doc in nlp.pipe(masked, batch_size=64):
                out.append([s for chunk in doc.noun_chunks if (s := self._phrase(chunk)) is not None])
        return out

    def _phrase(self, chunk) -> Span | None:
        tokens = list(chunk)
        while tokens and (tokens[0].pos_ in _TRIM_POS or tokens[0].pos_ == "VERB"
                          or tokens[0].lower_ in _GENERIC or tokens[0].is_stop):
            tokens.pop(0)
        while tokens and tokens[-1].pos_ not in ("NOUN", "PROPN"):
            tokens.pop()
        if not 2 <= len(tokens) <= MAX_PHRASE_WORDS:
            return None
        if any(not t.is_alpha and "-" not in t.text for t in tokens) or any(t.is_stop for t in tokens):
            return None
        start, end = tokens[0].idx, tokens[-1].idx + len(tokens[-1].text)
        text = chunk.doc.text[start:end]
        if "\n" in text or "  " in text:
            return None
        proper = any(t.pos_ == "PROPN" for t in tokens)
        return Span(text, "PROPN" if proper else TERM, start, end)

    def _recurring(self, documents, chosen, phrases: list[list[Span]]) -> set[str]:
        """Normalized phrases that occur in two documents of the batch (or earlier batches)."""
        seen: Counter[str] = Counter()
        offset = 0
        for chunks, on in zip(documents, chosen, strict=True):
            if not on:
                continue
            forms = {normalize_alias(s.text) for spans in phrases[offset : offset + len(chunks)] for s in spans}
            offset += len(chunks)
            seen.update(forms)
        recurring = {form for form, n in seen.items() if n >= 2} | (self._known_phrases & set(seen))
        self._known_phrases.update(seen)
        return recurring

    # -- one document ------------------------------------------------------------------------
    def _document(self, chunks: Sequence[Chunk], phrases: list[list[Span]], recurring: set[str]) -> DocumentTerms:
        result = DocumentTerms([])
        title = chunks[0].title.strip() if chunks else ""
        # Definitions first: a heading of words for a part of a text names its section only when
        # the document defines it; a defined term's heading keeps the term's type ("### 2.1 管理员"
        # over "管理员（Administrator）…" is the role).
        chunk_spans: list[list[Span]] = [[] for _ in chunks]
        chunk_defined = [self._definitions(c.text, spans, result.aliases) for c, spans in zip(chunks, chunk_spans, strict=True)]
        result.defined = {normalize_alias(term) for defined in chunk_defined for term in defined}
        path = path_names(section_path_parts(title), result.defines) if title else []
        heading = next((name for name in reversed(path) if name), "")  # the nearest that names
        for chunk, chunk_phrases, spans, defined in zip(chunks, phrases, chunk_spans, chunk_defined, strict=True):
            self._identifiers(chunk.text, spans)
            rows = self._table_rows(chunk.text, spans, defined)
            for s in chunk_phrases:
                if s.type == "PROPN" or normalize_alias(s.text) in recurring:
                    spans.append(Span(s.text, TERM, s.start, s.end))
            spans.extend(_heading_spans(chunk.text, result.defines))
            roles = role_titles(chunk.text)
            spans.extend(Span(r.title, TERM, r.start, r.end) for r in roles)
            result.spans.append([c for s in spans if (c := _clean(s)) is not None])
            if self.structure:
                result.links.extend(Link(a, b, ROW, chunk.id) for a, b in rows)
                # Every name the unit may go by, best first: the extractor keeps the first stored.
                result.links.extend(Link(r.title, unit, LEADS, chunk.id) for r in roles for unit in r.units)
                if heading:
                    result.links.extend(Link(term, heading, DEFINED_IN, chunk.id) for term in defined
                                        if normalize_alias(term) != normalize_alias(heading))
        if self.structure and chunks:
            self._section_links(chunks, result, path)
        return result

    def _definitions(self, text: str, spans: list[Span], aliases: list[tuple[str, str]]) -> list[str]:
        """Defined terms of one text (their spans added); acronym pairs added to ``aliases``."""
        defined: list[str] = []
        for m in _LONG_ACRONYM.finditer(text):
            acronym = m.group(2)
            long_form = _acronym_suffix(acronym, m.group(1))
            if long_form is None:
                continue
            start = m.end(1) - len(long_form)
            spans += [Span(long_form, DEFINED_TERM, start, m.end(1)), Span(acronym, DEFINED_TERM, *m.span(2))]
            aliases.append((acronym, long_form))
            defined.append(long_form)
        for m in _ACRONYM_OR_LONG.finditer(text):
            acronym, long_form = m.group(1), m.group(2)
            if acronym_matches(acronym, long_form):
                spans += [Span(acronym, DEFINED_TERM, *m.span(1)), Span(long_form, DEFINED_TERM, *m.span(2))]
                aliases.append((acronym, long_form))
                defined.append(long_form)
        for m in _BILINGUAL.finditer(text):
            self._bilingual(m, spans, aliases, defined)
        for pattern in (_IS_A, _BOLD_DEFINITION):
            for m in pattern.finditer(text):
                term = m.group(1).strip()
                first = term.split()[0].lower() if term.split() else ""
                if not term or first in self._stop or len(term.split()) > MAX_PHRASE_WORDS:
                    continue
                start = m.start(1) + (len(m.group(1)) - len(m.group(1).lstrip()))
                spans.append(Span(term, DEFINED_TERM, start, start + len(term)))
                defined.append(term)
        return defined

    @staticmethod
    def _bilingual(m: re.Match[str], spans: list[Span], aliases: list[tuple[str, str]], defined: list[str]) -> None:
        """"单点登录（Single Sign-On，简称 SSO）": the Chinese term, its English name and an
        abbreviation given with it are one entity (the English forms aliases of the Chinese term,
        when ``_specific``); the term is a defined term either way."""
        run = m.group(1)
        term = _HAN_CLAUSE.sub("", run)
        english, short = m.group(2).strip(), m.group(3)
        if not (2 <= len(term) <= MAX_HAN_TERM) or not re.search("[A-Za-z]", english) \
                or len(english.split()) > MAX_PHRASE_WORDS or english.lower().startswith(("e.g", "i.e", "see ")):
            return
        start = m.end(1) - len(term)
        spans.append(Span(term, DEFINED_TERM, start, m.end(1)))
        defined.append(term)
        for form, at in ((english, m.start(2)), (short, m.start(3))):
            if form and _specific(form):
                spans.append(Span(form, DEFINED_TERM, at, at + len(form)))
                aliases.append((form, term))

    @staticmethod
    def _identifiers(text: str, spans: list[Span]) -> None:
        blocked = [m.span() for m in _URLISH.finditer(text)]

        def free(start: int, end: int) -> bool:
            return not any(s < end and start < e for s, e in blocked)

        for pattern in _IDENTIFIERS:
            for m in pattern.finditer(text):
                if free(*m.span()) and m.group(0).lower() not in english_stop_words():
                    spans.append(Span(m.group(0), IDENTIFIER, *m.span()))
        for m in _CODE.finditer(text):
            if len(m.group(1).split()) <= 4 and free(*m.span()):
                spans.append(Span(m.group(1), IDENTIFIER, *m.span(1)))

    @staticmethod
    def _table_rows(text: str, spans: list[Span], defined: list[str]) -> list[tuple[str, str]]:
        """Entries of each Markdown table row (spans added); returns (first entry, other entry)
        pairs. The row above a separator line is a header: its cells name columns, not things."""
        lines = list(TABLE_LINE.finditer(text))
        headers = header_indices(lines)
        pairs: list[tuple[str, str]] = []
        for i, m in enumerate(lines):
            if i in headers:
                continue
            entries: list[Span] = []
            long_second = False
            position = m.start(1)
            for n, cell in enumerate(m.group(1).split("|")):
                entry = _cell_entry(cell, position)
                if n == 1 and len(cell.split()) >= 6:
                    long_second = True
                if entry is not None:
                    entries.append(entry)
                position += len(cell) + 1
            if not entries or SEPARATOR_CELL.match(m.group(1).split("|")[0]):
                continue
            first = entries[0]
            if long_second and len(entries) == 1:
                spans.append(Span(first.text, DEFINED_TERM, first.start, first.end))
                defined.append(first.text)
                continue
            spans.extend(entries)
            pairs.extend((first.text, e.text) for e in entries[1:])
        return pairs

    # -- structure ---------------------------------------------------------------------------
    def _section_links(self, chunks: Sequence[Chunk], result: DocumentTerms, path: list[str | None]) -> None:
        """``path``: the section title's parts as the names they give (``path_names``); a
        heading that names nothing is skipped, its child PART_OF the heading above it."""
        first = chunks[0].id
        parts = [name for name in path if name]
        # The sections above this one: the extractor names the section itself by its own heading.
        above = parts if len(path) > 1 and path[-1] is None else parts[:-1]
        result.context.extend((p, SECTION) for p in above)
        result.links.extend(Link(child, parent, PART_OF, first) for child, parent in zip(parts[1:], parts, strict=False))
        page = chunks[0].doc_id.split("#", 1)[0]
        page_title = parts[0] if parts else ""
        if page_title:
            for waiting in self._register_page(page, page_title):
                result.links.append(Link(waiting, page_title, LINKS_TO, first))
        if not parts:
            return
        heading = parts[-1]
        for chunk in chunks:
            for m in _LINK.finditer(chunk.text):
                target = _link_segments(page, m.group(1) or m.group(2))
                if not target:
                    continue
                found = self._resolve(target)
                if found and normalize_alias(found) != normalize_alias(heading):
                    result.links.append(Link(heading, found, LINKS_TO, chunk.id))
                elif found is None:
                    self._pending.setdefault(target, []).append(heading)

    def _register_page(self, page: str, page_title: str) -> list[str]:
        """Record a page's path suffixes; the headings whose links waited for it."""
        segments = _page_segments(page)
        if not segments or self._pages.get(segments) == page_title:
            return []
        waiting: list[str] = []
        for i in range(len(segments)):
            suffix = segments[i:]
            held = self._pages.get(suffix, page_title)
            self._pages[suffix] = page_title if held == page_title else None
        for target in [t for t in self._pending if t[-len(segments):] == segments or segments[-len(t):] == t]:
            waiting.extend(self._pending.pop(target))
        return list(dict.fromkeys(waiting))

    def _resolve(self, target: tuple[str, ...]) -> str | None:
        for i in range(len(target)):
            if target[i:] in self._pages:
                return self._pages[target[i:]]
        return None


def _specific(english: str) -> bool:
    """An English name specific enough to be another name of a Chinese term: several words, an
    abbreviation, or a word with a capital inside, a digit or a hyphen ("Single Sign-On", "SSO",
    "2FA", "OAuth"). A plain word ("Member", "Role") is a translation that names every member and
    role of the English documents: as an alias it joined every English section saying "Member"
    to the Chinese term (the handbook fixture's graph walk reached the Chinese guide)."""
    return len(english.split()) >= 2 or any(c.isupper() or c.isdigit() or c == "-" for c in english[1:])


def _heading_spans(text: str, known: Callable[[str], bool]) -> list[Span]:
    """The Markdown headings of a text that name something (``kgrag.lexicon.headings``), as
    section spans without their numbering; a ``#`` line inside a fenced code block is a comment,
    no heading."""
    spans: list[Span] = []
    for m in _HEADING_LINE.finditer(text):
        if in_fenced_block(text, m.start()):
            continue
        name = heading_name(m.group(1), known)
        if name is not None and m.group(1).endswith(name):  # a defined term's section keeps its type
            spans.append(Span(name, DEFINED_TERM if known(name) else SECTION, m.end(1) - len(name), m.end(1)))
    return spans


def _clean(span: Span) -> Span | None:
    """The span without edge backticks/quotes; None when it still holds markup or cannot match."""
    start, end = span.start, span.end
    text = span.text
    while text and text[0] in "`\"'":
        text, start = text[1:], start + 1
    while text and text[-1] in "`\"'":
        text, end = text[:-1], end - 1
    if not text or any(c in _MARKUP_CHARS for c in text) or not matchable(normalize_alias(text)):
        return None
    if text[-1] in "?？":  # a question ("**问：用户离职后应该怎么处理？** 答：…") is no term
        return None
    return Span(text, span.type, start, end)


def ner_text(text: str) -> str:
    """``text`` with link targets, HTML tags and emphasis marks blanked (offsets hold)."""
    return _NER_NOISE.sub(lambda m: " " * (m.end() - m.start()), text)


def _cell_entry(cell: str, offset: int) -> Span | None:
    """The entry a table cell names (a link's text, a code span, or the plain text), when it
    is short enough to be a name."""
    m = _CELL_LINK.search(cell) or _CELL_CODE.search(cell)
    if m is not None:
        start, end = m.span(1)
    else:
        start, end = 0, len(cell)
    while start < end and cell[start] in " \t*_":
        start += 1
    while end > start and cell[end - 1] in " \t*_":
        end -= 1
    text = cell[start:end]
    words = text.split()
    if not words or len(words) > MAX_ENTRY_WORDS or not any(c.isalpha() for c in text):
        return None
    return Span(text, IDENTIFIER if m is not None and m.re is _CELL_CODE else TABLE_ENTRY, offset + start, offset + end)


def _page_segments(path: str) -> tuple[str, ...]:
    segments = [s for s in path.lower().split("/") if s and s != "."]
    if segments:
        segments[-1] = re.sub(r"\.(?:md|markdown|html?|txt)$", "", segments[-1])
        if segments[-1] in _INDEX_PAGES:
            segments.pop()
    return tuple(segments)


def _link_segments(page: str, href: str) -> tuple[str, ...]:
    """The path segments a link points at, relative links resolved against ``page``."""
    parts = urlsplit(href)
    path = parts.path
    if not path or parts.scheme in ("mailto", "tel"):
        return ()
    if not parts.scheme and not path.startswith("/"):
        path = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
    return _page_segments(path)
