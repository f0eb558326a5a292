"""Store fixtures for the contract suite: every implementation of a protocol runs every test.

A factory is a context manager ``factory(tmp_path, dim) -> store``: it yields a fresh, empty
store and cleans it up afterwards. To run the suite against another implementation, append
one line to the registry, e.g.::

    pytest.param(other_graph_store, id="other-engine", marks=pytest.mark.other_engine),

A factory that cannot start its backend should ``pytest.skip("<reason>")`` so the reason is
printed, never pass silently.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kgrag.stores.base import ChunkIndex, GraphStore
from kgrag.stores.elasticsearch.chunks import ElasticsearchChunkIndex
from kgrag.stores.sqlite.chunks import SqliteChunkIndex
from kgrag.stores.sqlite.graph import SqliteGraphStore

# Vector size used by every contract test (small: the contract is about behaviour, not scale).
DIM = 8


@contextmanager
def sqlite_chunk_index(tmp_path: Path, dim: int) -> Iterator[ChunkIndex]:
    store = SqliteChunkIndex(tmp_path / "chunks.sqlite", dim=dim)
    try:
        yield store
    finally:
        store.close()


class _KeywordOnlyElasticsearchIndex(ElasticsearchChunkIndex):
    """An index on a server without kNN (``knn=False``): a test that reaches dense search is
    skipped there, with the reason, after every keyword-side assertion before it has run."""

    def search_dense(self, vector, k, filters=None):
        pytest.skip(f"{self.url}: osmem-server has no kNN (dense search is tested on es-docker/es-env)")


@contextmanager
def _elasticsearch_chunk_index(server, dim: int) -> Iterator[ChunkIndex]:
    """A fresh index on ``server`` (a tests.es_servers getter), dropped afterwards. Capability
    check: a server without kNN gets the keyword-only index above."""
    from tests.es_servers import drop_index, fresh_index_name

    client, url, knn = server()
    index = fresh_index_name()
    cls = ElasticsearchChunkIndex if knn else _KeywordOnlyElasticsearchIndex
    store = cls(client, index, url=url, dim=dim, knn=knn)
    try:
        yield store
    finally:
        drop_index(client, index)


def es_osmem_chunk_index(tmp_path: Path, dim: int):
    from tests.es_servers import osmem_client

    return _elasticsearch_chunk_index(osmem_client, dim)


def es_docker_chunk_index(tmp_path: Path, dim: int):
    from tests.es_servers import docker_client

    return _elasticsearch_chunk_index(docker_client, dim)


def es_env_chunk_index(tmp_path: Path, dim: int):
    from tests.es_servers import env_client

    return _elasticsearch_chunk_index(env_client, dim)


@contextmanager
def sqlite_graph_store(tmp_path: Path, dim: int) -> Iterator[GraphStore]:
    store = SqliteGraphStore(tmp_path / "graph.sqlite")
    try:
        yield store
    finally:
        store.close()


CHUNK_INDEX_FACTORIES = [
    pytest.param(sqlite_chunk_index, id="sqlite"),
    pytest.param(es_osmem_chunk_index, id="es-osmem", marks=pytest.mark.osmem),
    pytest.param(es_docker_chunk_index, id="es-docker", marks=pytest.mark.docker),
    pytest.param(es_env_chunk_index, id="es-env"),
]


def neo4j_graph_store(tmp_path: Path, dim: int):
    from tests.neo4j_servers import fresh_store, neo4j_server

    return fresh_store(neo4j_server())


def neo4j_arcadedb_graph_store(tmp_path: Path, dim: int):
    from tests.neo4j_servers import arcadedb_server, fresh_store

    return fresh_store(arcadedb_server())


def neo4j_docker_graph_store(tmp_path: Path, dim: int):
    from tests.neo4j_servers import docker_server, fresh_store

    return fresh_store(docker_server())


def neo4j_env_graph_store(tmp_path: Path, dim: int):
    from tests.neo4j_servers import env_server, fresh_store

    return fresh_store(env_server())


GRAPH_STORE_FACTORIES = [
    pytest.param(sqlite_graph_store, id="sqlite"),
    pytest.param(neo4j_graph_store, id="neo4j", marks=pytest.mark.neo4j),
    pytest.param(neo4j_arcadedb_graph_store, id="neo4j-arcadedb", marks=pytest.mark.arcadedb),
    pytest.param(neo4j_docker_graph_store, id="neo4j-docker", marks=pytest.mark.docker),
    pytest.param(neo4j_env_graph_store, id="neo4j-env"),
]


@pytest.fixture(params=CHUNK_INDEX_FACTORIES)
def chunk_index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ChunkIndex]:
    with request.param(tmp_path, DIM) as store:
        yield store


@pytest.fixture(params=GRAPH_STORE_FACTORIES)
def graph_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GraphStore]:
    with request.param(tmp_path, DIM) as store:
        yield store
