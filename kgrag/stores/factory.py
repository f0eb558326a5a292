"""Stores by name: the one place that maps configuration to an implementation."""

from __future__ import annotations

from kgrag.config import Settings
from kgrag.stores.base import ChunkIndex, GraphStore


def build_chunk_index(settings: Settings) -> ChunkIndex:
    if settings.chunk_store == "sqlite":
        from kgrag.stores.sqlite_chunks import SqliteChunkIndex

        settings.data_dir.mkdir(parents=True, exist_ok=True)
        return SqliteChunkIndex(settings.data_dir / "chunks.sqlite")
    if settings.chunk_store == "elasticsearch":
        from kgrag.stores.es_chunks import ElasticsearchChunkIndex

        # The vector size is fixed by the first vectors written (the embedder's dimension).
        return ElasticsearchChunkIndex.from_settings(settings.elasticsearch)
    raise ValueError(
        f"chunk_store {settings.chunk_store!r} is not available in this build "
        "(supported: sqlite, elasticsearch)"
    )


def build_graph_store(settings: Settings) -> GraphStore:
    if settings.graph_store == "sqlite":
        from kgrag.stores.sqlite_graph import SqliteGraphStore

        settings.data_dir.mkdir(parents=True, exist_ok=True)
        return SqliteGraphStore(settings.data_dir / "graph.sqlite")
    if settings.graph_store == "neo4j":
        from kgrag.stores.neo4j_graph import Neo4jGraphStore

        return Neo4jGraphStore(settings.neo4j)
    raise ValueError(
        f"graph_store {settings.graph_store!r} is not available in this build "
        "(supported: sqlite, neo4j)"
    )
