"""What generation returns: an answer text with numbered citations, and what the checker found."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kgrag.retrieve.trace import result_dict
from kgrag.retrieve.types import Hit, RetrievalResult
from kgrag.types import Chunk


@dataclass
class Citation:
    """One source cited in the answer text as ``[n]``."""

    n: int  # the number used in the answer text (the source's number in the prompt)
    chunk_id: str  # the child chunk retrieval found (hit.chunk.id)
    doc_id: str
    source: str
    title: str
    page: int | None
    section_path: str
    snippet: str  # the source sentence(s) that best support what cites it, <= ~300 chars
    # [start, end) character spans, in the cited chunk's text, of the sentence(s) the answer
    # rests on: what a reader of the full chunk should see highlighted.
    highlights: list[list[int]] = field(default_factory=list)


@dataclass
class Answer:
    """A checked answer.

    ``citations`` holds only the sources the text actually cites, sorted by ``n``. Numbers are
    NOT renumbered: ``[n]`` in the text is source n of the prompt, so gaps are possible (an
    answer citing sources 1 and 3 has citations n=1 and n=3). Every marker left in ``text`` is
    written ``[n]`` (``[1, 2]`` and ``【1】`` are normalised to ``[1][2]`` and ``[1]``).
    """

    text: str
    citations: list[Citation]
    abstained: bool
    mode: str  # "llm" | "extractive" | "abstain" | "small_talk"
    model: str | None = None  # litellm model name when mode == "llm"
    # Markers naming a source that was not given (e.g. "[7]" with 5 sources): removed from text.
    invalid_citations: list[str] = field(default_factory=list)
    # Sentences with no citation, or whose cited sources share too few terms with them.
    unsupported_sentences: list[str] = field(default_factory=list)
    # Why an LLM was configured but the answer is extractive (e.g. "APIConnectionError: ...").
    fallback_reason: str | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    # A date worked out for today from a rule a cited source states (``kgrag.generate.extractive.dates_for_today``):
    # date, today, the rule as written, its source number, and how the question read.
    worked_out: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def response(self, result: RetrievalResult) -> dict[str, Any]:
        """The answer with the retrieval it came from, as ``/v1/query`` and ``kgrag query --json``
        show it: the text under ``answer``, then ``hits`` and ``trace``."""
        body = self.to_dict()
        body["answer"] = body.pop("text")
        retrieval = result_dict(result)
        body["hits"], body["trace"] = retrieval["hits"], retrieval["trace"]
        return body


@dataclass
class Source:
    """A numbered source as the LLM sees it: the context text of one or more hits.

    Hits whose context is the same parent chunk share one source (the model would otherwise
    read the same text twice); ``hits`` keeps them all, first one first.
    """

    n: int
    hits: list[Hit]
    text: str  # the context text, trimmed to this source's share of the budget
    offset: int  # document offset of text[0] (to find which child a sentence lies in)

    @property
    def context(self) -> Chunk:
        return self.hits[0].context

    def whole(self) -> Source:
        """This source over its whole context: a long context is cut to a window around the
        matched chunk for the prompt, and what a reader looks for is often just past it (the
        next table row, "He was born in London")."""
        context = self.context
        if self.offset == context.start and len(self.text) == len(context.text):
            return self
        return Source(n=self.n, hits=self.hits, text=context.text, offset=context.start)

    @property
    def opened_header(self) -> tuple[str, ...]:
        """The header cells of the table this source's text opens inside, below its header line
        (``Chunk.table_header_cells``: the chunker cut the rows from it); () when the text does
        not start where its context does (a window further in)."""
        context = self.context
        return context.table_header_cells if self.offset == context.start else ()

    @property
    def header(self) -> str:
        ctx = self.context
        parts = [ctx.title or ctx.source or ctx.doc_id]
        if ctx.section_path and ctx.section_path != ctx.title:
            parts.append(ctx.section_path)
        if ctx.page is not None:
            parts.append(f"page {ctx.page}")
        return " | ".join(parts)
