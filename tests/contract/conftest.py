"""Store fixtures for the contract suite: every implementation of a protocol runs every test.

A factory is a context manager ``factory(tmp_path, dim) -> store``: it yields a fresh, empty
store and cleans it up afterwards. To run the suite against another implementation, append
one line to the registry, e.g.::

    pytest.param(neo4j_graph_store, id="neo4j-arcadedb", marks=pytest.mark.arcadedb),

A factory that cannot start its backend should ``pytest.skip("<reason>")`` so the reason is
printed, never pass silently.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kgrag.stores.base import ChunkIndex, GraphStore
from kgrag.stores.sqlite_chunks import SqliteChunkIndex
from kgrag.stores.sqlite_graph import SqliteGraphStore

# Vector size used by every contract test (small: the contract is about behaviour, not scale).
DIM = 8


@contextmanager
def sqlite_chunk_index(tmp_path: Path, dim: int) -> Iterator[ChunkIndex]:
    store = SqliteChunkIndex(tmp_path / "chunks.sqlite", dim=dim)
    try:
        yield store
    finally:
        store.close()


@contextmanager
def sqlite_graph_store(tmp_path: Path, dim: int) -> Iterator[GraphStore]:
    store = SqliteGraphStore(tmp_path / "graph.sqlite")
    try:
        yield store
    finally:
        store.close()


CHUNK_INDEX_FACTORIES = [
    pytest.param(sqlite_chunk_index, id="sqlite"),
]
GRAPH_STORE_FACTORIES = [
    pytest.param(sqlite_graph_store, id="sqlite"),
]


@pytest.fixture(params=CHUNK_INDEX_FACTORIES)
def chunk_index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ChunkIndex]:
    with request.param(tmp_path, DIM) as store:
        yield store


@pytest.fixture(params=GRAPH_STORE_FACTORIES)
def graph_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GraphStore]:
    with request.param(tmp_path, DIM) as store:
        yield store
