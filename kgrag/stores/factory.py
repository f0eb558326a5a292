"""Stores by name: maps the settings' store kinds (``kgrag.config``: ``Settings.chunk_store`` /
``graph_store``) to an implementation; the transfer command reads the kinds from there too.

Adapters are imported when built, so this module imports no engine driver.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kgrag.config import CHUNK_STORE_KINDS, EMBEDDED, GRAPH_STORE_KINDS
from kgrag.errors import ConfigError

if TYPE_CHECKING:
    from kgrag.config import Settings
    from kgrag.stores.base import ChunkIndex, GraphStore
    from kgrag.stores.consistency import WriteJournal

CHUNK_INDEX_FILE = "chunks.sqlite"
GRAPH_STORE_FILE = "graph.sqlite"
JOURNAL_FILE = "journal.sqlite"


def build_chunk_index(settings: Settings) -> ChunkIndex:
    if settings.chunk_store == "sqlite":
        from kgrag.stores.sqlite.chunks import SqliteChunkIndex

        settings.data_dir.mkdir(parents=True, exist_ok=True)
        return SqliteChunkIndex(settings.data_dir / CHUNK_INDEX_FILE,
                                dense_approx_from=settings.retrieval.dense_approx_from or None)
    if settings.chunk_store == "elasticsearch":
        from kgrag.stores.elasticsearch.chunks import ElasticsearchChunkIndex

        # The vector size is fixed by the first vectors written (the embedder's dimension).
        return ElasticsearchChunkIndex.from_settings(settings.elasticsearch)
    raise ConfigError(
        f"chunk_store {settings.chunk_store!r} is not available in this build "
        f"(supported: {', '.join(CHUNK_STORE_KINDS)})"
    )


def build_graph_store(settings: Settings) -> GraphStore:
    if settings.graph_store == "sqlite":
        from kgrag.stores.sqlite.graph import SqliteGraphStore

        settings.data_dir.mkdir(parents=True, exist_ok=True)
        return SqliteGraphStore(settings.data_dir / GRAPH_STORE_FILE)
    if settings.graph_store == "neo4j":
        from kgrag.stores.neo4j.graph import Neo4jGraphStore

        return Neo4jGraphStore(settings.neo4j)
    raise ConfigError(
        f"graph_store {settings.graph_store!r} is not available in this build "
        f"(supported: {', '.join(GRAPH_STORE_KINDS)})"
    )


def build_journal(settings: Settings) -> WriteJournal:
    """The write journal (``kgrag.stores.consistency``): a SQLite file under the data dir, for
    every store kind (it holds pending writes, not the knowledge base)."""
    from kgrag.stores.sqlite.journal import SqliteWriteJournal

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return SqliteWriteJournal(settings.data_dir / JOURNAL_FILE)


def embedded_file(kind: str, half: Literal["graph", "chunks"], settings: Settings) -> Path | None:
    """The file an embedded store of this half keeps under the data dir; None for a server."""
    if kind != EMBEDDED:
        return None
    return settings.data_dir / (GRAPH_STORE_FILE if half == "graph" else CHUNK_INDEX_FILE)


def store_place(kind: str, settings: Settings) -> tuple:
    """Where a store of ``kind`` lives under ``settings`` (two equal places are one store)."""
    if kind == EMBEDDED:
        return (kind, settings.data_dir.resolve())
    if kind == "neo4j":
        return (kind, settings.neo4j.url, settings.neo4j.database)
    if kind == "elasticsearch":
        return (kind, settings.elasticsearch.url, settings.elasticsearch.index)
    raise ConfigError(f"unknown store kind {kind!r}")
