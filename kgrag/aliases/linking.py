"""Late linking: after an alias is added, the chunks already in the knowledge base that contain
it get their mentions, without re-embedding or re-ingesting anything.

Candidates come from the chunk index's BM25 search for each alias (every chunk holding one
of its terms), or from one pass over every chunk when there are so many aliases that the
searches would cost more (an import of thousands of names; an alias made only of stop words).
Each candidate is confirmed by matching its text with a gazetteer over the graph's whole alias
table — the matcher ingestion uses, so longest match, word boundaries and the case rules
agree with what ingestion would have found had it known the alias. A confirmed chunk gets a
mention of the entity (count: how often its aliases match there) and a CO_OCCURS relation
with the chunk's other entities, as ingestion would have written. ``AliasAdmin.add_mentions``
only ever raises counts, so running this twice changes nothing.

``plan_links`` links many entities at once with one gazetteer (a glossary import: building
one per entry over the whole alias table made an import of n rows cost n² — 20,000 rows ran
for more than 11 minutes) and writes nothing, so the caller can write it in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kgrag.lexicon.gazetteer import Gazetteer, matchable
from kgrag.stores.base import AliasGraph, ChunkIndex
from kgrag.text.analyze import analyze
from kgrag.text.normalize import normalize_alias
from kgrag.types import CO_OCCURS, Chunk, Mention, Relation

# Most candidate chunks examined per alias (Elasticsearch's default result window); beyond it
# the report says ``capped``: the chunks left out are linked when their document is re-ingested.
MAX_CANDIDATES = 10_000
BATCH = 500
# One BM25 search costs about as much as matching this many chunks with the gazetteer: with
# more aliases than the index holds chunks / SEARCH_COST, one pass over every chunk is cheaper.
SEARCH_COST = 10


@dataclass
class LinkReport:
    candidates: int = 0  # chunks examined
    linked_chunks: list[str] | None = None  # chunks that now mention the entity through the aliases
    mentions_written: int = 0  # mentions created or raised
    capped: bool = False

    def to_dict(self) -> dict:
        return {"candidates": self.candidates, "linked_chunks": len(self.linked_chunks or []),
                "mentions_written": self.mentions_written, "capped": self.capped}


@dataclass
class LinkPlan:
    """What linking found, not yet written: the mentions and relations to add, and per entity
    the chunks that will mention it."""

    mentions: list[Mention] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    linked: dict[str, list[str]] = field(default_factory=dict)
    candidates: int = 0
    capped: bool = False


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
    already = {chunk_id for chunk_id, _ in graph.mentions_of([key]).get(key, [])} if only_missing else set()
    plan = plan_links(graph, chunk_index, {key: list(aliases)}, Gazetteer(graph.alias_table()),
                      max_entities_per_chunk=max_entities_per_chunk, skip={key: already})
    report = LinkReport(candidates=plan.candidates, linked_chunks=plan.linked.get(key, []), capped=plan.capped)
    if plan.mentions:
        report.mentions_written = graph.alias_admin.add_mentions(plan.mentions, plan.relations)
    return report


def plan_links(
    graph: AliasGraph,
    chunk_index: ChunkIndex,
    wanted: Mapping[str, Sequence[str]],
    gazetteer: Gazetteer,
    *,
    max_entities_per_chunk: int = 30,
    skip: Mapping[str, set[str]] | None = None,
    renamed: Mapping[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LinkPlan:
    """Find the stored chunks where each entity of ``wanted`` (key → names to look for) is
    named, matching with ``gazetteer`` (the alias table as it will be once the caller's change
    is written). ``skip``: key → chunks to leave alone; ``renamed``: keys the caller's change
    folds into others (what the graph still calls them → what they will be); ``progress``:
    called with (chunks examined, candidates) as linking goes."""
    plan = LinkPlan()
    names = {key: normalized for key, given in wanted.items()
             if (normalized := {n for a in given if matchable(n := normalize_alias(a or ""))})}
    if not names:
        return plan
    skip = skip or {}
    found: dict[str, dict[str, int]] = {}  # chunk id → key → how many matches name the key
    excluded: dict[tuple[str, str], set[str]] = {}  # (chunk, key) → other readings of the same spans
    for chunk in _candidates(chunk_index, sorted(set().union(*names.values())), plan, progress):
        if not chunk.searchable:
            continue
        by_key: dict[str, list] = {}
        for match in gazetteer.match(chunk.text):
            for key in match.entity_keys:
                if key in names:
                    by_key.setdefault(key, []).append(match)
        for key, matches in by_key.items():
            if chunk.id in skip.get(key, ()) or not any(m.normalized in names[key] for m in matches):
                continue
            found.setdefault(chunk.id, {})[key] = len(matches)
            excluded[(chunk.id, key)] = {k for m in matches for k in m.entity_keys}
    if not found:
        return plan
    renamed = renamed or {}
    chunk_ids = sorted(found)
    others: dict[str, list[str]] = {}
    for start in range(0, len(chunk_ids), BATCH):
        others.update(graph.chunk_entities(chunk_ids[start:start + BATCH]))
    for chunk_id in chunk_ids:
        keys = found[chunk_id]
        # The chunk's most mentioned entities first (as the graph names them once the change is
        # written), then the ones this linking adds to it.
        present = list(dict.fromkeys([renamed.get(k, k) for k in others.get(chunk_id, [])] + list(keys)))
        for key, count in keys.items():
            plan.mentions.append(Mention(key, chunk_id, count))
            plan.linked.setdefault(key, []).append(chunk_id)
            # As many as ingestion relates per chunk.
            related = [k for k in present if k != key and k not in excluded[(chunk_id, key)]]
            plan.relations += [Relation(key, other, chunk_id, CO_OCCURS, 1.0)
                               for other in related[: max(0, max_entities_per_chunk - 1)]]
    return plan


def _candidates(chunk_index: ChunkIndex, aliases: Sequence[str], plan: LinkPlan,
                progress: Callable[[int, int], None] | None) -> Iterable[Chunk]:
    """The chunks that may name one of ``aliases``: BM25's hits for each, or every chunk."""
    total = chunk_index.count()
    scan_all = len(aliases) * SEARCH_COST >= total or any(not analyze(alias) for alias in aliases)
    if scan_all:  # one pass over every chunk (stop words only: BM25 cannot find them)
        plan.candidates = total
        done = 0
        for chunk, _ in chunk_index.iter_chunks(BATCH):
            yield chunk
            done += 1
            if progress is not None and done % BATCH == 0:
                progress(done, total)
        if progress is not None:
            progress(done, total)
        return
    ids: dict[str, None] = {}
    for alias in aliases:
        hits = chunk_index.search_bm25(alias, MAX_CANDIDATES)
        plan.capped = plan.capped or len(hits) >= MAX_CANDIDATES
        ids.update(dict.fromkeys(h.id for h in hits))
    ordered = list(ids)
    plan.candidates = len(ordered)
    for start in range(0, len(ordered), BATCH):
        yield from chunk_index.get(ordered[start:start + BATCH])
        if progress is not None:
            progress(min(start + BATCH, len(ordered)), len(ordered))
