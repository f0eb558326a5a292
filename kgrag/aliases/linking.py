"""Late linking: after an alias is added, the chunks already in the knowledge base that contain
it get their mentions, without re-embedding or re-ingesting anything.

Candidates come from the chunk index's BM25 search for the alias (every chunk holding one of
its terms; an alias made only of stop words falls back to scanning every chunk). Each
candidate is confirmed by matching its text with a gazetteer over the graph's whole alias
table — the matcher ingestion uses, so longest match, word boundaries and the case rules
agree with what ingestion would have found had it known the alias. A confirmed chunk gets a
mention of the entity (count: how often its aliases match there) and a CO_OCCURS relation
with the chunk's other entities, as ingestion would have written. ``AliasAdmin.add_mentions``
only ever raises counts, so running this twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kgrag.lexicon.gazetteer import Gazetteer, matchable
from kgrag.stores.base import AliasGraph, ChunkIndex
from kgrag.text.analyze import analyze
from kgrag.text.normalize import normalize_alias
from kgrag.types import CO_OCCURS, Chunk, Mention, Relation

# Most candidate chunks examined per alias (Elasticsearch's default result window); beyond it
# the report says ``capped``: the chunks left out are linked when their document is re-ingested.
MAX_CANDIDATES = 10_000
BATCH = 500


@dataclass
class LinkReport:
    candidates: int = 0  # chunks examined
    linked_chunks: list[str] | None = None  # chunks that now mention the entity through the aliases
    mentions_written: int = 0  # mentions created or raised
    capped: bool = False

    def to_dict(self) -> dict:
        return {"candidates": self.candidates, "linked_chunks": len(self.linked_chunks or []),
                "mentions_written": self.mentions_written, "capped": self.capped}


def link_aliases(
    graph: AliasGraph,
    chunk_index: ChunkIndex,
    key: str,
    aliases: Sequence[str],
    *,
    max_entities_per_chunk: int = 30,
    only_missing: bool = False,
) -> LinkReport:
    """Link entity ``key`` in the stored chunks containing any of ``aliases``.

    ``only_missing``: leave chunks that already mention the entity alone (a split uses this so
    the counts it restored from provenance stay exact)."""
    report = LinkReport(linked_chunks=[])
    wanted = {n for a in aliases if matchable(n := normalize_alias(a or ""))}
    if not wanted:
        return report
    gazetteer = Gazetteer(graph.alias_table())
    already = {chunk_id for chunk_id, _ in graph.mentions_of([key]).get(key, [])} if only_missing else set()
    found: dict[str, int] = {}  # chunk id → how many alias matches name the entity
    excluded: dict[str, set[str]] = {}  # chunk id → other readings of the same spans
    for batch in _candidate_batches(chunk_index, sorted(wanted), report):
        for chunk in batch:
            if not chunk.searchable or chunk.id in already:
                continue
            matches = [m for m in gazetteer.match(chunk.text) if key in m.entity_keys]
            if any(m.normalized in wanted for m in matches):
                found[chunk.id] = len(matches)
                excluded[chunk.id] = {k for m in matches for k in m.entity_keys}
    if not found:
        return report
    mentions = [Mention(key, chunk_id, count) for chunk_id, count in found.items()]
    relations = []
    others = graph.chunk_entities(list(found))
    for chunk_id in found:
        # The chunk's most mentioned entities, as many as ingestion relates per chunk.
        related = [k for k in others.get(chunk_id, []) if k not in excluded[chunk_id]]
        relations += [Relation(key, other, chunk_id, CO_OCCURS, 1.0)
                      for other in related[: max(0, max_entities_per_chunk - 1)]]
    report.mentions_written = graph.alias_admin.add_mentions(mentions, relations)
    report.linked_chunks = sorted(found)
    return report


def _candidate_batches(chunk_index: ChunkIndex, aliases: Sequence[str], report: LinkReport) -> Iterable[list[Chunk]]:
    ids: dict[str, None] = {}
    scan_all = False
    for alias in aliases:
        if not analyze(alias):
            scan_all = True  # only stop words: BM25 cannot find it
            break
        hits = chunk_index.search_bm25(alias, MAX_CANDIDATES)
        report.capped = report.capped or len(hits) >= MAX_CANDIDATES
        ids.update(dict.fromkeys(h.id for h in hits))
    if scan_all:
        batch: list[Chunk] = []
        for chunk, _ in chunk_index.iter_chunks(BATCH):
            report.candidates += 1
            batch.append(chunk)
            if len(batch) >= BATCH:
                yield batch
                batch = []
        if batch:
            yield batch
        return
    ordered = list(ids)
    report.candidates = len(ordered)
    for start in range(0, len(ordered), BATCH):
        yield chunk_index.get(ordered[start:start + BATCH])
