"""Training pairs mined from a knowledge base itself: no LLM, no download, no labelled data.

Each miner reads the stored chunks (and the graph) and writes ``Example``s: a query, the chunk
that answers it, and the chunks that may answer it too (never used as negatives). Passages are
read whole, as at query time. ``add_negatives`` then takes hard negatives from the BM25 and dense
top ranks of each query, as the served pipeline would find them.

Sources (``SOURCES``):

- ``heading``: a section's heading (with its document's title when the heading is not unique)
  → the section's first chunk.
- ``definition``: "What is X?" / "What does X stand for?" → the chunk defining X ("**X**: …",
  "X (ABC) is a …", "X means …").
- ``table_row``: a column name and a row's key ("Channel for CISO") → the chunk holding the row.
- ``relation``: two entities the graph relates, phrased as a question → a chunk naming both;
  chunks naming only one of them are the first negatives.
- ``two_hop``: an entity and a second one reached through a bridge entity → the bridge's chunk
  naming the second one, ahead of the chunks naming only the first (the first hop's neighbours).
- ``sentence``: a sentence of a chunk → the chunk.
- ``feedback``: questions rated in the feedback store → the chunks they cited (rated up).
- ``gold``: an evaluation set's questions → their gold chunks (``GoldQuestion``), when a team
  has some.
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from kgrag.text.markdown_tables import table_lines
from kgrag.text.scripts import has_han
from kgrag.types import Chunk

SOURCES = ("heading", "definition", "table_row", "relation", "two_hop", "sentence", "feedback", "gold")
MINED_SOURCES = ("heading", "definition", "table_row", "relation", "two_hop", "sentence")

_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\n]*\)")
_MARKS = re.compile(r"\*\*|__|`|(?<!\w)\*|\*(?!\w)")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'&.-]*")
# "**Term**: text", "- Term: text", "Term - text" at a line's start.
_DEFINED_LINE = re.compile(r"^\s*(?:[-*+]\s+)?\*\*(?P<term>[^*\n]{2,60}?)\*\*\s*[:\-–—]\s*(?P<rest>\S.{20,})$", re.MULTILINE)
# "Term (ABC) is a …", "ABC stands for …", "Term means …", "Term refers to …".
_DEFINED_SENTENCE = re.compile(
    r"(?:^|(?<=[.!?]\s))(?:The\s+)?(?P<term>[A-Z][\w&/-]*(?:\s+(?:[A-Z][\w&/-]*|of|and|for|the|to|in)){0,6})"
    r"(?:\s+\((?P<abbr>[A-Z][A-Za-z0-9&]{1,9})\))?"
    r"\s+(?:is\s+(?:a|an|the|our|when|how|where)|are\s+(?:a|the|our)|means|refers\s+to|stands\s+for)\b")
_GENERIC_HEADINGS = frozenset({
    "overview", "introduction", "summary", "background", "purpose", "scope", "process", "resources", "faq",
    "faqs", "references", "links", "contact", "contacts", "examples", "example", "notes", "details", "about",
    "how to", "related", "other", "misc", "miscellaneous", "description", "history", "see also", "steps",
})


@dataclass
class Example:
    """One training query with the chunk that answers it."""

    query: str
    positive: str  # chunk id
    source: str  # which miner (``SOURCES``)
    also_right: frozenset[str] = frozenset()  # chunks that may answer too: never negatives
    negatives: list[str] = field(default_factory=list)  # filled by ``add_negatives``
    first_negatives: tuple[str, ...] = ()  # negatives the miner knows (taken before the ranked ones)


@dataclass(frozen=True)
class GoldQuestion:
    """An evaluation question with the documents (passages) that answer it."""

    question: str
    doc_ids: tuple[str, ...]


@dataclass(frozen=True)
class RatedQuestion:
    """A question from the feedback store: the chunks it cited, and whether it was rated up."""

    question: str
    chunk_ids: tuple[str, ...]
    helpful: bool


def readable(text: str) -> str:
    """Inline Markdown as read: links as their text, no emphasis or code marks, one space."""
    return " ".join(_MARKS.sub("", _LINK.sub(r"\1", text)).split())


def is_english(chunk: Chunk) -> bool:
    """Chunks the shipped MiniLM reads: no Han characters (a Chinese or mixed chunk is left out
    of training and of reranking, ``kgrag.reranker.language``)."""
    return not has_han(chunk.text) and not has_han(chunk.title)


def passage_text(chunk: Chunk, hide: Sequence[str] = ()) -> str:
    """What the reranker reads of a chunk (``Chunk.headed_text``), with ``hide`` cut out."""
    text = chunk.headed_text
    for piece in hide:
        if piece:
            text = text.replace(piece, " ")
    return "\n".join(line for line in (ln.strip() for ln in text.splitlines()) if line.strip("#/> "))


def _last_heading(chunk: Chunk) -> str:
    parts = [p.strip() for p in (chunk.section_path or chunk.title).split(">") if p.strip()]
    return parts[-1] if parts else ""


def _content_words(text: str) -> list[str]:
    return _WORD.findall(text)


class Miner:
    """The miners over one knowledge base's English searchable chunks (and its graph)."""

    def __init__(self, chunks: Sequence[Chunk], chunk_entities: Callable[[Sequence[str]], dict[str, list[str]]],
                 entity_names: Callable[[Sequence[str]], dict[str, str]], seed: int = 0):
        self.chunks = [c for c in chunks if c.searchable and c.text.strip() and is_english(c)]
        self.by_id = {c.id: c for c in self.chunks}
        self.chunk_entities = chunk_entities
        self.entity_names = entity_names
        self.rng = random.Random(seed)
        self._sections: dict[tuple[str, str], list[str]] = defaultdict(list)
        self._docs: dict[str, list[Chunk]] = defaultdict(list)
        for c in self.chunks:
            self._sections[(c.doc_id, c.section_path or c.title)].append(c.id)
            self._docs[c.doc_id].append(c)
        self._graph_index: tuple[dict[str, list[str]], dict[str, set[str]], dict[str, str]] | None = None

    def doc_chunks(self, doc_id: str) -> list[Chunk]:
        return self._docs.get(doc_id, [])

    def same_section(self, chunk: Chunk) -> frozenset[str]:
        return frozenset(self._sections[(chunk.doc_id, chunk.section_path or chunk.title)])

    # -- headings -------------------------------------------------------------------------------
    def headings(self) -> Iterator[Example]:
        firsts: dict[tuple[str, str], Chunk] = {}
        for c in self.chunks:
            firsts.setdefault((c.doc_id, c.section_path or c.title), c)
        counts = Counter(_last_heading(c).casefold() for c in firsts.values())
        for chunk in firsts.values():
            heading = readable(_last_heading(chunk))
            words = _content_words(heading)
            if not words or len(words) > 14 or heading.casefold() in _GENERIC_HEADINGS and len(words) < 2:
                continue
            query = heading
            doc_title = readable(chunk.title.split(">")[0]) if chunk.title else ""
            if (counts[_last_heading(chunk).casefold()] > 1 or heading.casefold() in _GENERIC_HEADINGS) and doc_title:
                if doc_title.casefold() == heading.casefold():
                    continue
                query = f"{doc_title}: {heading}"
            body = passage_text(chunk, self._headings_of(chunk))
            if len(_content_words(body)) < 8:
                continue
            yield Example(query, chunk.id, "heading", self.same_section(chunk))

    @staticmethod
    def _headings_of(chunk: Chunk) -> tuple[str, ...]:
        """The heading strings a chunk shows: its title, section path, each part, and its
        Markdown heading lines (longest first, so a part is cut only after the whole)."""
        pieces = {chunk.title, chunk.section_path}
        for source in (chunk.title, chunk.section_path):
            pieces.update(p.strip() for p in source.split(">"))
        pieces.update(m.group(0).strip() for m in _HEADING_LINE.finditer(chunk.text))
        return tuple(sorted((p for p in pieces if p), key=len, reverse=True))

    # -- definitions ----------------------------------------------------------------------------
    def definitions(self) -> Iterator[Example]:
        seen: set[str] = set()
        for chunk in self.chunks:
            for term, abbr in self._defined(chunk.text):
                key = term.casefold()
                if key in seen:
                    continue
                seen.add(key)
                if abbr:
                    seen.add(abbr.casefold())
                    query = self.rng.choice([f"What does {abbr} stand for?", f"What is {abbr}?"])
                else:
                    query = self.rng.choice([f"What is {term}?", f"What does {term} mean?", f"Define {term}"])
                yield Example(query, chunk.id, "definition")

    @staticmethod
    def _defined(text: str) -> Iterator[tuple[str, str]]:
        for m in _DEFINED_LINE.finditer(text):
            term = readable(m.group("term")).strip(" :")
            if 1 <= len(_content_words(term)) <= 6:
                yield term, ""
        for m in _DEFINED_SENTENCE.finditer(readable(text)):
            term, abbr = m.group("term").strip(), m.group("abbr") or ""
            words = _content_words(term)
            if not words or words[0] in {"It", "This", "That", "There", "These", "They", "He", "She", "We", "You"}:
                continue
            yield term, abbr

    # -- table rows -----------------------------------------------------------------------------
    def table_rows(self, per_table: int = 3) -> Iterator[Example]:
        for chunk in self.chunks:
            by_table: dict[int, list] = defaultdict(list)
            header_of = chunk.table_header_cells
            for line in table_lines(chunk.text):
                if line.kind == "row":
                    by_table[line.table].append(line)
            for table, rows in by_table.items():
                for line in self.rng.sample(rows, min(per_table, len(rows))):
                    header = line.header or (header_of if table == 0 else ())
                    cells = [readable(c) for c in line.cells]
                    names = [readable(h) for h in header]
                    if len(cells) < 2 or len(names) != len(cells) or not cells[0] or len(cells[0]) > 80:
                        continue
                    columns = [j for j in range(1, len(cells)) if cells[j] and names[j] and len(names[j]) < 40]
                    if not columns:
                        continue
                    j = self.rng.choice(columns)
                    query = self.rng.choice([f"What is the {names[j]} for {cells[0]}?", f"{names[j]} of {cells[0]}",
                                             f"Which {names[j]} does {cells[0]} have?"])
                    yield Example(query, chunk.id, "table_row")

    # -- graph ----------------------------------------------------------------------------------
    def _entities(self, max_chunks: int = 20) -> tuple[dict[str, list[str]], dict[str, set[str]], dict[str, str]]:
        """chunk → entity keys, entity → chunks (among these chunks), and the names of the
        specific entities (in 2 to ``max_chunks`` chunks): the only ones a query names."""
        if self._graph_index is not None:
            return self._graph_index
        by_chunk: dict[str, list[str]] = {}
        ids = [c.id for c in self.chunks]
        for start in range(0, len(ids), 500):
            by_chunk.update(self.chunk_entities(ids[start:start + 500]))
        by_entity: dict[str, set[str]] = defaultdict(set)
        for cid, keys in by_chunk.items():
            for key in keys:
                by_entity[key].add(cid)
        names = self.entity_names(sorted(k for k, cids in by_entity.items() if 2 <= len(cids) <= max_chunks))
        self._graph_index = (by_chunk, by_entity, names)
        return self._graph_index

    def relations(self, max_chunks: int = 20) -> Iterator[Example]:
        """Entity pairs named together in a chunk, each entity specific (in at most
        ``max_chunks`` chunks), the pair in few chunks."""
        by_chunk, by_entity, names = self._entities(max_chunks)
        seen: set[tuple[str, str]] = set()
        for chunk in self.rng.sample(self.chunks, len(self.chunks)):
            keys = [k for k in by_chunk.get(chunk.id, []) if k in names]
            if len(keys) < 2:
                continue
            a, b = self.rng.sample(keys, 2)
            pair = (min(a, b), max(a, b))
            both = by_entity[a] & by_entity[b]
            if pair in seen or len(both) > 3:
                continue
            seen.add(pair)
            only_one = sorted((by_entity[a] | by_entity[b]) - both)
            query = self.rng.choice([f"How is {names[a]} related to {names[b]}?", f"What do {names[a]} and {names[b]} have to do with each other?",
                                     f"{names[a]} and {names[b]}"])
            yield Example(query, chunk.id, "relation", frozenset(both),
                          first_negatives=tuple(self.rng.sample(only_one, min(2, len(only_one)))))

    def two_hops(self, max_chunks: int = 20) -> Iterator[Example]:
        """A → B in one chunk, B → C in another (A not in it): the query names A and C, the
        answer is the chunk joining B and C; chunks naming A but not C are the first negatives."""
        by_chunk, by_entity, names = self._entities(max_chunks)
        seen: set[tuple[str, str]] = set()
        specific = set(names)
        for first in self.rng.sample(self.chunks, len(self.chunks)):
            keys = [k for k in by_chunk.get(first.id, []) if k in specific]
            if len(keys) < 2:
                continue
            a, bridge = self.rng.sample(keys, 2)
            seconds = [cid for cid in sorted(by_entity[bridge]) if cid != first.id and a not in by_chunk.get(cid, [])]
            if not seconds:
                continue
            second = self.rng.choice(seconds)
            ends = [k for k in by_chunk.get(second, []) if k in specific and k not in (a, bridge)
                    and first.id not in by_entity[k]]
            if not ends:
                continue
            c = self.rng.choice(ends)
            if (a, c) in seen:
                continue
            seen.add((a, c))
            right = frozenset(cid for cid in by_entity[bridge] & by_entity[c])
            first_hop = sorted(by_entity[a] - by_entity[c] - {first.id})
            query = f"What {names[c]} is connected to {names[a]}?"
            yield Example(query, second, "two_hop", right,
                          first_negatives=tuple(self.rng.sample(first_hop, min(2, len(first_hop)))))

    # -- sentences ------------------------------------------------------------------------------
    def sentences(self) -> Iterator[Example]:
        from kgrag.text.sentences import split_sentences

        for chunk in self.chunks:
            candidates = [s.text for s in split_sentences(chunk.text)
                          if 8 <= len(_content_words(s.text)) <= 35 and not s.text.lstrip().startswith(("#", "|"))]
            if len(candidates) < 2:
                continue
            sentence = self.rng.choice(candidates)
            yield Example(readable(sentence), chunk.id, "sentence")

    def mine(self, sources: Iterable[str]) -> dict[str, list[Example]]:
        miners = {"heading": self.headings, "definition": self.definitions, "table_row": self.table_rows,
                  "relation": self.relations, "two_hop": self.two_hops, "sentence": self.sentences}
        return {name: list(miners[name]()) for name in sources if name in miners}


def from_gold(questions: Iterable[GoldQuestion], known: set[str],
              doc_chunks: Callable[[str], list[Chunk]]) -> list[Example]:
    """One example per gold document: its chunk sharing most words with the question answers,
    every chunk of a gold document may (never a negative)."""
    out = []
    for q in questions:
        by_doc = {doc: [c for c in doc_chunks(doc) if c.id in known] for doc in q.doc_ids}
        right = frozenset(c.id for chunks in by_doc.values() for c in chunks)
        words = set(w.casefold() for w in _content_words(q.question))
        for chunks in by_doc.values():
            if chunks:
                best = max(chunks, key=lambda c: len(words & {w.casefold() for w in _content_words(c.headed_text)}))
                out.append(Example(q.question, best.id, "gold", right))
    return out


def from_feedback(rated: Iterable[RatedQuestion], known: set[str]) -> list[Example]:
    """A question rated up: each chunk it cited answers it; rated down: they are its first negatives."""
    out: list[Example] = []
    down: dict[str, set[str]] = defaultdict(set)
    ups: list[RatedQuestion] = []
    for r in rated:
        if r.helpful:
            ups.append(r)
        else:
            down[r.question.casefold()].update(cid for cid in r.chunk_ids if cid in known)
    for r in ups:
        ids = [cid for cid in r.chunk_ids if cid in known]
        wrong = tuple(sorted(down.get(r.question.casefold(), set()) - set(ids)))
        out += [Example(r.question, cid, "feedback", frozenset(ids), first_negatives=wrong) for cid in ids[:1]]
    return out


def group_passages(example: Example, chunks: dict[str, Chunk]) -> list[str]:
    """What the reranker reads of an example's chunks, the positive first: each chunk's
    ``headed_text`` whole, as at query time (``kgrag.retrieve.reranking``). Nothing is cut out of
    the positive (the heading or sentence a query was made of): a positive missing the query's
    own words, among hard negatives chosen for holding them, taught the model to prefer passages
    that do not say what is asked (docs/decisions.md, "The reranker trained on the knowledge
    base")."""
    return [chunks[cid].headed_text for cid in [example.positive, *example.negatives]]


def add_negatives(examples: Sequence[Example], ranked: Callable[[str], list[str]], per_example: int,
                  rng: random.Random, known: set[str]) -> list[Example]:
    """Fills each example's negatives: its miner's own first, then from ``ranked(query)`` (chunk
    ids best first: the BM25 and dense top ranks), never the positive, a chunk that may answer
    too, or a chunk outside ``known``. Examples left with no negative are dropped."""
    out = []
    for ex in examples:
        banned = {ex.positive, *ex.also_right}
        chosen = [cid for cid in ex.first_negatives if cid not in banned and cid in known][: per_example // 2]
        for cid in ranked(ex.query):
            if len(chosen) >= per_example:
                break
            if cid not in banned and cid in known and cid not in chosen:
                chosen.append(cid)
        if chosen:
            ex.negatives = chosen
            out.append(ex)
    rng.shuffle(out)
    return out
