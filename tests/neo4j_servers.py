"""Bolt servers for the Neo4j graph store tests: the real Neo4j 5 Community from Maven Central's
jars (``kgrag.testing.neo4j``; scripts/test and CI), ArcadeDB's Bolt server (arcadedb-embedded,
a second Bolt implementation the contract suite keeps honest), a Neo4j 5 container
(testcontainers, where Docker answers) and a server named by ``KGRAG_TEST_NEO4J_URL``.

``KGRAG_REQUIRE_NEO4J=1`` (set by scripts/test) makes the local Neo4j's tests fail, not skip,
when it cannot start. Neo4j Community has one user database, so every purpose shares it; the
tests run one at a time and ``fresh_store`` empties it around each.

Each ``*_server()`` returns a ``BoltTarget`` for one server per test session, started on first
use (and stopped when the test process exits), or calls ``pytest.skip`` with the reason it
cannot. ``fresh_store(target)`` yields a Neo4jGraphStore on an emptied database and empties
it again afterwards.

KGRAG_TEST_NEO4J_URL (with KGRAG_TEST_NEO4J_USER, default neo4j, KGRAG_TEST_NEO4J_PASSWORD and
optionally KGRAG_TEST_NEO4J_DATABASE) must name a throwaway database: the tests wipe it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kgrag.config import Neo4jSettings
from kgrag.stores.neo4j.graph import Neo4jGraphStore
from kgrag.testing.neo4j import Neo4jServer
from tests.backend_cache import BackendCache, Unavailable

NEO4J_IMAGE = "neo4j:5-community"
# Test-only housekeeping: empties a throwaway test database between tests (no values bound).
_WIPE = "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS"
_WIPE_SIMPLE = "MATCH (n) DETACH DELETE n"
WIPE_STATEMENTS = (_WIPE, _WIPE_SIMPLE)


@dataclass
class BoltTarget:
    name: str
    settings: Callable[[str], Neo4jSettings]  # purpose (a database name where it can vary) → settings


_backends: BackendCache[BoltTarget] = BackendCache()
_local_neo4j: list[Neo4jServer] = []
# What each started server is, for the summary at the end of the run (tests/conftest.py).
STARTED: dict[str, str] = {}


def neo4j_server() -> BoltTarget:
    """The real Neo4j 5 Community (engines/neo4j/pom.xml), started once per test session with its
    data in a temp folder, stopped and removed when the test process exits."""

    def start() -> BoltTarget:
        from kgrag.testing.neo4j import Neo4jUnavailable

        root = tempfile.mkdtemp(prefix="kgrag-neo4j-")
        try:
            server = Neo4jServer.start(root)
        except (Neo4jUnavailable, OSError) as e:
            shutil.rmtree(root, ignore_errors=True)
            raise Unavailable(f"the local Neo4j (engines/neo4j) cannot start: {e}") from e

        def stop() -> None:
            server.stop()
            shutil.rmtree(root, ignore_errors=True)

        atexit.register(stop)
        _local_neo4j.append(server)
        STARTED["neo4j"] = (f"{server.agent} Community at {server.url} (Browser {server.browser_url}), "
                            f"Bolt answered {server.started_s:.1f} s after launch")
        return BoltTarget("neo4j", lambda purpose: server.settings())

    return _backends.get("neo4j", start, required="KGRAG_REQUIRE_NEO4J")


def local_neo4j() -> Neo4jServer:
    """The server behind ``neo4j_server()`` (the Browser test needs its HTTP port too)."""
    neo4j_server()
    return _local_neo4j[0]


def arcadedb_server() -> BoltTarget:
    """ArcadeDB (arcadedb-embedded) with its Bolt plugin on 127.0.0.1, one database per purpose."""

    def start() -> BoltTarget:
        from kgrag.testing.arcadedb import ArcadeBoltServer, ArcadeUnavailable

        root = tempfile.mkdtemp(prefix="kgrag-arcadedb-")
        try:
            server = ArcadeBoltServer.start(root)
        except (ArcadeUnavailable, OSError) as e:
            raise Unavailable(f"ArcadeDB Bolt server cannot start: {e}") from e

        def stop() -> None:
            server.stop()
            shutil.rmtree(root, ignore_errors=True)

        atexit.register(stop)
        created: set[str] = set()

        def settings(purpose: str) -> Neo4jSettings:
            if purpose not in created:
                server.create_database(purpose)
                created.add(purpose)
            return server.settings(purpose)

        return BoltTarget("arcadedb", settings)

    return _backends.get("arcadedb", start)


def docker_server() -> BoltTarget:
    """Neo4j 5 community in a container, where a Docker daemon answers (one database)."""

    def start() -> BoltTarget:
        try:
            import docker

            docker.from_env(timeout=5).ping()
        except Exception as e:  # no daemon, no socket, no permission: all mean "cannot run"
            raise Unavailable(
                f"no Docker daemon answers ({type(e).__name__}: {str(e)[:100]}); Neo4j 5 container tests skipped"
            ) from e
        from testcontainers.community.neo4j import Neo4jContainer

        container = Neo4jContainer(NEO4J_IMAGE, password="kgrag-test-password")
        container.start()
        atexit.register(container.stop)
        url = container.get_connection_url()
        return BoltTarget("docker", lambda purpose: Neo4jSettings(
            url=url, user="neo4j", password="kgrag-test-password", max_retry_s=5.0))

    return _backends.get("docker", start)


def env_server() -> BoltTarget:
    def start() -> BoltTarget:
        url = os.environ.get("KGRAG_TEST_NEO4J_URL")
        if not url:
            raise Unavailable("KGRAG_TEST_NEO4J_URL is not set; tests against an external Neo4j skipped")
        settings = Neo4jSettings(
            url=url, user=os.environ.get("KGRAG_TEST_NEO4J_USER", "neo4j"),
            password=os.environ.get("KGRAG_TEST_NEO4J_PASSWORD"),
            database=os.environ.get("KGRAG_TEST_NEO4J_DATABASE") or None, max_retry_s=5.0,
        )
        return BoltTarget("env", lambda purpose: settings)

    return _backends.get("env", start)


def wipe(store: Neo4jGraphStore) -> None:
    """Empty the store's database (nodes and edges; the schema stays)."""
    with store._run.driver.session(database=store._run.settings.database) as session:
        if store.dialect is None:  # Neo4j: batched, so a big leftover graph cannot exhaust memory
            session.run(_WIPE).consume()
        else:
            session.run(_WIPE_SIMPLE).consume()


@contextmanager
def fresh_store(target: BoltTarget, purpose: str = "contract") -> Iterator[Neo4jGraphStore]:
    store = Neo4jGraphStore(target.settings(purpose))
    try:
        wipe(store)
        yield store
    finally:
        try:
            wipe(store)
        finally:
            store.close()
