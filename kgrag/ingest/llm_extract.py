"""Optional LLM extraction (``extraction.llm``, off by default): one call per chunk through
litellm (``kgrag.models.llm``, the same client and ``llm`` settings as answering) asks for the
chunk's entities, their aliases and typed relations as JSON constrained by a schema
(``response_format``), validated here with pydantic.

Contracts:
- A chunk whose call fails (timeout, server down, empty reply) or whose reply is not valid JSON
  of the schema is skipped with the reason in ``LLMCost.skipped``; the ingest goes on with that
  chunk's NER/term extraction alone. Nothing here raises.
- An entity is kept only when its name or one of its aliases is written in the chunk (a small
  model invents names; a name the chunk does not hold has no evidence to cite). A relation is
  kept only between two kept entities.
- Provenance (``kgrag.ingest.extract`` merges the result): relation types are written
  ``llm:<RELATION>`` and an entity first found by the LLM is typed ``llm:<TYPE>``, so the graph
  and a trace tell LLM edges from extracted ones.
- ``LLMCost`` counts calls, tokens and seconds, reported by the ingest job.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass, field

from pydantic import BaseModel, Field, ValidationError

from kgrag.config import ExtractionSettings, LLMSettings
from kgrag.types import Chunk

log = logging.getLogger(__name__)

LLM_PREFIX = "llm:"
MAX_ITEMS = 20
MAX_REASONS = 50  # skipped chunks listed by reason in the report (all are counted)

_PROMPT = (
    "List the entities named in the text (people, roles, teams, groups, products, tools, "
    "processes, defined terms) with a one-word type and any other spelling or acronym the text "
    "gives them, and the relations between them. Use names exactly as written. Example: for "
    "\"The Finance team is led by the Chief Financial Officer (CFO).\" answer "
    '{"entities": [{"name": "Finance team", "type": "TEAM", "aliases": []}, '
    '{"name": "Chief Financial Officer", "type": "ROLE", "aliases": ["CFO"]}], '
    '"relations": [{"source": "Chief Financial Officer", "relation": "LEADS", "target": "Finance team"}]}'
)


class LLMEntity(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    type: str = Field("TERM", max_length=40)
    aliases: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)


class LLMRelation(BaseModel):
    source: str = Field(min_length=1, max_length=100)
    relation: str = Field(min_length=1, max_length=60)
    target: str = Field(min_length=1, max_length=100)


class ChunkGraph(BaseModel):
    """What the model returns for one chunk (its JSON schema is the ``response_format``)."""

    entities: list[LLMEntity] = Field(default_factory=list, max_length=MAX_ITEMS)
    relations: list[LLMRelation] = Field(default_factory=list, max_length=MAX_ITEMS)


@dataclass
class LLMCost:
    calls: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    entities_kept: int = 0
    entities_dropped: int = 0  # named nothing the chunk holds
    relations_kept: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)  # {"chunk_id", "reason"}

    def to_dict(self) -> dict:
        per_call = self.seconds / self.calls if self.calls else 0.0
        return {
            "calls": self.calls, "failed": self.failed, "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens, "seconds": round(self.seconds, 3),
            "seconds_per_chunk": round(per_call, 3), "entities_kept": self.entities_kept,
            "entities_dropped": self.entities_dropped, "relations_kept": self.relations_kept,
            "skipped": list(self.skipped),
        }  # fmt: skip


def relation_type(label: str) -> str:
    """``llm:<UPPER_SNAKE>`` of the model's relation label ("leads" → "llm:LEADS")."""
    snake = re.sub(r"[^0-9A-Za-z]+", "_", label).strip("_").upper()[:40]
    return LLM_PREFIX + (snake or "RELATED_TO")


def entity_type(label: str) -> str:
    word = re.sub(r"[^0-9A-Za-z]+", "_", label).strip("_").upper()[:30]
    return LLM_PREFIX + (word or "TERM")


def _written_in(name: str, text: str) -> bool:
    name = " ".join(name.split()).lower()
    return len(name) >= 2 and name in " ".join(text.split()).lower()


def _claims(entity: LLMEntity, form: str) -> bool:
    form = form.strip().lower()
    return form in entity.name.lower() or any(form == a.strip().lower() for a in entity.aliases)


def supported(graph: ChunkGraph, text: str) -> tuple[list[LLMEntity], list[LLMRelation], int]:
    """The entities whose name or an alias is written in ``text`` (aliases kept only when
    written too, the name moved to a written spelling if need be), the relations between them,
    and how many entities were dropped."""
    kept: dict[str, LLMEntity] = {}
    dropped = 0
    spelling: dict[str, str] = {}  # any lower-cased spelling → kept entity name
    for i, entity in enumerate(graph.entities):
        # An alias that another entity of the reply also claims, or holds in its name ("CISO"
        # given to "Security Operations team" beside "Chief Information Security Officer (CISO)"),
        # is no evidence that the two spellings are one thing.
        others = [o for j, o in enumerate(graph.entities) if j != i]
        aliases = [a for a in entity.aliases if not any(_claims(o, a) for o in others)]
        forms = [f for f in [entity.name, *aliases] if _written_in(f, text)]
        if not forms:
            dropped += 1
            continue
        name = forms[0].strip()
        if name.lower() in spelling:
            continue
        kept[name] = LLMEntity(name=name, type=entity.type, aliases=[f.strip() for f in forms[1:]])
        for form in forms:
            spelling.setdefault(form.strip().lower(), name)
    relations = []
    for r in graph.relations:
        source, target = spelling.get(r.source.strip().lower()), spelling.get(r.target.strip().lower())
        if source and target and source != target:
            relations.append(LLMRelation(source=source, relation=r.relation, target=target))
    return list(kept.values()), relations, dropped


class LLMExtractor:
    """Reads one chunk at a time; keeps the cost of every call in ``cost``."""

    def __init__(self, llm: LLMSettings, settings: ExtractionSettings) -> None:
        self.llm = llm.model_copy(update={"max_tokens": settings.llm_max_tokens, "timeout_s": settings.llm_timeout_s})
        self.settings = settings
        self.cost = LLMCost()
        self._schema = ChunkGraph.model_json_schema()  # how it constrains: llm.structured_output

    def read(self, chunk: Chunk) -> tuple[list[LLMEntity], list[LLMRelation]]:
        """The supported entities and relations of one chunk; ([], []) when skipped."""
        from kgrag.models.llm import LLMError, complete_structured

        text = chunk.text[: self.settings.llm_max_chars]
        messages = [{"role": "system", "content": _PROMPT}, {"role": "user", "content": text}]
        started = time.perf_counter()
        self.cost.calls += 1
        try:
            reply, tokens = complete_structured(self.llm, messages, self._schema, "chunk_graph")
            self.cost.prompt_tokens += tokens["prompt_tokens"]
            self.cost.completion_tokens += tokens["completion_tokens"]
            graph = ChunkGraph.model_validate(json.loads(reply))
        except LLMError as error:
            return self._skip(chunk, f"LLM call failed: {error}", started)
        except (json.JSONDecodeError, ValidationError) as error:
            reason = " ".join(str(error).split())[:200]
            return self._skip(chunk, f"reply is not JSON of the schema: {type(error).__name__}: {reason}", started)
        self.cost.seconds += time.perf_counter() - started
        entities, relations, dropped = supported(graph, chunk.text)
        self.cost.entities_kept += len(entities)
        self.cost.entities_dropped += dropped
        self.cost.relations_kept += len(relations)
        return entities, relations

    def _skip(self, chunk: Chunk, reason: str, started: float) -> tuple[list[LLMEntity], list[LLMRelation]]:
        self.cost.seconds += time.perf_counter() - started
        self.cost.failed += 1
        log.warning("LLM extraction skipped chunk %s: %s", chunk.id, reason)
        if len(self.cost.skipped) < MAX_REASONS:
            self.cost.skipped.append({"chunk_id": chunk.id, "reason": reason})
        return [], []
