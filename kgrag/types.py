"""Plain data types shared by every layer (ingestion, stores, retrieval, server).

They are dataclasses rather than pydantic models: they cross hot loops (thousands of chunks
per second) and carry no validation logic of their own. Validation happens at the edges
(config, HTTP requests, glossary files).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Entity types kgrag assigns itself (NER labels such as PERSON or ORG come from the model).
CONCEPT = "CONCEPT"  # an entity no NER label names: glossary terms, names met only by alias
TITLE = "TITLE"  # a document title that no NER label names
# Entity types of the term extractor (``kgrag.ingest.terms``): a recurring noun phrase, a term
# the text defines, a code-like identifier (#channel, snake_case, CamelCase), a section heading,
# an entry of a table row.
TERM = "TERM"
DEFINED_TERM = "DEFINED_TERM"
IDENTIFIER = "IDENTIFIER"
SECTION = "SECTION"
TABLE_ENTRY = "TABLE_ENTRY"
# Terms a question may write in lower case and still name ("fiscal quarter", "e-group"): they
# were found as phrases of the team's own documents, not as capitalized names.
ANY_CASE_TYPES = frozenset({TERM, DEFINED_TERM, IDENTIFIER, SECTION, TABLE_ENTRY})
# Relation types. CO_OCCURS: two entities named in one chunk; undirected. The others come from
# document structure (``kgrag.ingest.terms``): a section is PART_OF its parent section, a term is
# DEFINED_IN the section that defines it, the entries of one table row are in one ROW, a
# section LINKS_TO the page its link points at, an acronym is an ALIAS_OF its long form, a role
# title LEADS the unit it names ("Chief Marketing Officer" → "Marketing", ``kgrag.ingest.role_titles``).
CO_OCCURS = "CO_OCCURS"
PART_OF = "PART_OF"
DEFINED_IN = "DEFINED_IN"
ROW = "ROW"
LINKS_TO = "LINKS_TO"
ALIAS_OF = "ALIAS_OF"
LEADS = "LEADS"

# Chunk.metadata keys of where a chunk's sections / pages start, when it spans several
# ([[offset in the chunk's text, path or page], ...]; read by Chunk.section_at / page_at).
SECTIONS_KEY = "sections"
PAGES_KEY = "pages"
# Chunk.metadata key of the header cells of the Markdown table a chunk opens inside (below the
# header line): read by Chunk.heading / headed_text, so a run of rows keeps its column names.
TABLE_HEADER_KEY = "table_header"


@dataclass
class Document:
    """One source document (a file, a row of a CSV, a line of a JSONL corpus)."""

    id: str
    source: str  # path or URL the text came from
    title: str = ""
    text: str = ""  # full normalized text; not stored in the graph
    hash: str = ""  # content hash: decides skip / replace on re-ingest
    # (start offset, page number) pairs for paged formats (PDF); page of offset x is the last
    # start <= x. Empty for unpaged formats.
    pages: list[tuple[int, int]] = field(default_factory=list)
    format: str = "txt"  # loader that produced it: txt, md, html, pdf, docx, csv, jsonl, code
    metadata: dict[str, Any] = field(default_factory=dict)
    # Filterable facets (kgrag.facets: language, doc_type, tags, date), recorded by the ingestion
    # job from what the loader found: a Markdown file's front matter, the file's mtime.
    facets: dict[str, Any] = field(default_factory=dict)
    front_matter: dict[str, Any] = field(default_factory=dict)
    file_mtime: float | None = None


def child_chunk_id(doc_id: str, ordinal: int) -> str:
    """The id of a document's searchable chunk number ``ordinal`` (0, 1, 2 … in reading order):
    the chunker names its chunks so, and a positional follow-up finds neighbours by it."""
    return f"{doc_id}#c{ordinal}"


@dataclass
class Chunk:
    """A span of a document. Children are indexed (searched); parents are what generation reads.

    A chunk with ``parent_id is None`` and ``is_parent False`` is a stand-alone chunk (it is both
    searched and read). Offsets are character offsets into ``Document.text``.
    """

    id: str
    doc_id: str
    text: str
    source: str = ""
    title: str = ""
    section_path: str = ""
    page: int | None = None
    start: int = 0
    end: int = 0
    ordinal: int = 0  # position within the document
    parent_id: str | None = None
    is_parent: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def searchable(self) -> bool:
        return not self.is_parent

    def section_at(self, offset: int) -> str:
        """The section path of the text at ``offset`` (in ``text``): ``section_path`` unless the
        chunk spans several sections, whose starts the chunker keeps under
        ``metadata[SECTIONS_KEY]``. ``section_path`` is then their common ancestor (often the
        document itself), too coarse to cite a sentence by."""
        return str(_value_at(self.metadata.get(SECTIONS_KEY), offset, self.section_path))

    def page_at(self, offset: int) -> int | None:
        """The page of the text at ``offset``: ``page`` (where the chunk starts) unless the chunk
        runs over a page break, whose pages the chunker keeps under ``metadata[PAGES_KEY]``."""
        page = _value_at(self.metadata.get(PAGES_KEY), offset, self.page)
        return None if page is None else int(page)

    @property
    def table_header_cells(self) -> tuple[str, ...]:
        """The header cells of the Markdown table this chunk opens inside, or () (the chunk
        opens elsewhere, or with the header itself)."""
        return tuple(self.metadata.get(TABLE_HEADER_KEY) or ())

    @property
    def table_header(self) -> str:
        """``table_header_cells`` as a header line ("| Level | Scope of impact |"), or ""."""
        cells = self.table_header_cells
        return f"| {' | '.join(cells)} |" if cells else ""

    @property
    def heading(self) -> str:
        """Title, section path and table header, one a line: what BM25 indexes as the chunk's
        heading field (both stores)."""
        return "\n".join(p for p in (self.title, self.section_path, self.table_header) if p)

    @property
    def headed_text(self) -> str:
        """The text with its title and section in front: what the embedder and the reranker
        see, because short chunks often never name their subject ("It was founded in 1755").
        A chunk opening inside a table gets the table's header line too: a run of rows cut from
        its header ("| Manager/Staff | … | Across Teams | Implements |") says nothing of
        "scope of impact" otherwise."""
        head = " / ".join(p for p in (self.title, self.section_path) if p)
        if self.text.startswith(self.title or "\0"):
            head = ""
        return "\n".join(p for p in (head, self.table_header, self.text) if p)


def _value_at(starts: list[list[Any]] | None, offset: int, default: Any) -> Any:
    """The value of the last ``[start, value]`` with ``start <= offset`` (``default`` before the first)."""
    value = default
    for start, here in starts or ():
        if start > offset:
            break
        value = here
    return value


@dataclass
class Entity:
    """A graph entity. ``key`` is the normalized canonical name; aliases are surface forms."""

    key: str
    name: str
    type: str = CONCEPT
    aliases: list[str] = field(default_factory=list)
    # Curated entities (from a glossary or the alias admin) survive having no mention.
    curated: bool = False


@dataclass
class Mention:
    entity_key: str
    chunk_id: str
    count: int = 1
    surface: str = ""  # the text as it appeared (first occurrence)


@dataclass
class Relation:
    """An edge between two entities evidenced by one chunk; the store sums weights per edge.

    Relations are stored per evidencing chunk so that deleting a document removes exactly the
    relations only it evidenced.
    """

    source_key: str
    target_key: str
    chunk_id: str
    type: str = CO_OCCURS
    weight: float = 1.0


@dataclass
class ScoredId:
    """A ranked hit from one retrieval primitive (chunk id + score, higher is better).
    ``calibrated``: a dense hit's cosine in the vector space the abstention gate's dense
    threshold is measured in (``SpaceQuery.calibrated``); None: that space did not rank it, or
    the hit is no dense hit."""

    id: str
    score: float
    calibrated: float | None = None


@dataclass
class GraphPath:
    """Evidence for a graph hit: the entity keys walked from a linked entity, and edge types."""

    nodes: list[str]
    edges: list[str] = field(default_factory=list)
    # Weight of each edge (summed relation weight, e.g. how many chunks evidence a co-occurrence):
    # one per edge, or empty when the store does not report weights.
    weights: list[float] = field(default_factory=list)

    @property
    def hops(self) -> int:
        return len(self.nodes) - 1



@dataclass(frozen=True)
class Turn:
    """One earlier exchange: what the user asked and, optionally, what was answered and the
    chunks the answer cited (or, for a turn that only retrieved, the hit shown first): a
    follow-up that asks for "the next one" means the neighbour of *that* chunk."""

    question: str
    answer: str | None = None
    cited: tuple[str, ...] = ()
