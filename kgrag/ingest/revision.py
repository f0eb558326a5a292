"""Which ingestion built a stored document: its revision, kept with its content hash.

A document is skipped when its stored hash equals the hash of what is loaded now. Had that
hash been the content alone, a knowledge base would keep what an older ingestion made of a
file for as long as the file stays unchanged: chunks of another size after ``chunking`` was
changed, vectors of another model after ``embedder`` was, and none of what a newer kgrag
stores (chunks opening inside a table kept no table header before revision 2). So the stored
hash is the content hash stamped with a revision (``stamped``): a digest of ``INGEST_REVISION``
and of the settings that change what is stored for a document. Unchanged content under
another revision is rebuilt once (``IngestReport.rebuilt``); nothing else changes.

Per document, not per knowledge base: a run over one folder rebuilds that folder's documents
only, and a run killed half way leaves the rest to rebuild at the next run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from kgrag.config import EmbedderSettings, MetadataSettings, Settings

# Bump when a change of code alters what ingestion stores for the same file and settings
# (chunk boundaries or metadata, vectors, entities, aliases, relations): every knowledge base
# then rebuilds each document the next time it is ingested. Not for a change that stores the
# same (a refactor, a faster path): a rebuild costs the whole ingestion time.
# 1: the plain content hash of every kgrag before revisions were stamped.
# 2: a chunk opening inside a Markdown table keeps the table's header (``Chunk.table_header``).
INGEST_REVISION = 2

# Between the content hash and the revision in a stored hash. Content hashes are hex.
SEPARATOR = "@"


def stored_settings(settings: Settings, embedder: EmbedderSettings | None = None) -> dict[str, Any]:
    """The settings that change what ingestion stores for a document (not batch sizes, worker
    counts or the engine that computes the same vectors), as JSON values. ``embedder``: the one
    this knowledge base really uses, when it differs from the settings' (``Components``)."""
    extraction = settings.extraction.model_dump(mode="json", exclude={"ner_processes", "glossary"})
    if extraction["llm"]:
        extraction["llm_model"] = settings.llm.model
    else:  # LLM extraction off: its knobs store nothing
        extraction = {k: v for k, v in extraction.items() if not k.startswith("llm")}
    # Facet sources (kgrag.ingest.record_facets) only when changed, so the defaults keep their digest.
    facets = {} if settings.metadata == MetadataSettings() else {"metadata": settings.metadata.model_dump(mode="json")}
    embedder = embedder or settings.embedder
    return {
        **facets,
        "chunking": settings.chunking.model_dump(mode="json"),
        # The engine computes the same vectors (to 2e-7, kgrag/models/onnx_embedder.py).
        "embedder": embedder.model_dump(mode="json", exclude={"batch_size", "e5_batch_size", "engine"}),
        "extraction": extraction,
    }


def revision(settings: Settings, embedder: EmbedderSettings | None = None) -> str:
    """A short digest of ``INGEST_REVISION`` and ``stored_settings``: equal exactly when a
    document would be stored the same."""
    value = {"revision": INGEST_REVISION, **stored_settings(settings, embedder)}
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


def stamped(content_hash: str, stamp: str) -> str:
    """The hash a document is stored under: its content hash and the revision that built it."""
    return f"{content_hash}{SEPARATOR}{stamp}"


def stale(stored: Mapping[str, str], stamp: str) -> list[str]:
    """The documents (ids, sorted) of ``stored`` (id → stored hash) that were stored under
    another revision than ``stamp``, or before revisions: the next ingest of their sources
    rebuilds them."""
    return sorted(doc_id for doc_id, stored_hash in stored.items() if stamp_of(stored_hash) != stamp)


def content_of(stored_hash: str) -> str:
    """The content part of a stored hash (all of it for one stored before revisions)."""
    return stored_hash.partition(SEPARATOR)[0]


def stamp_of(stored_hash: str) -> str:
    """The revision part of a stored hash ("" for one stored before revisions)."""
    return stored_hash.partition(SEPARATOR)[2]
