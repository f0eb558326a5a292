"""Bolt connection for the Neo4j graph store: one long-lived driver per process and server,
managed transactions (retried on transient errors), statements by name, errors as StoreError.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import neo4j
from neo4j.exceptions import DriverError, Neo4jError

from kgrag.errors import StoreError
from kgrag.stores.neo4j.cypher_loader import CypherLoader

if TYPE_CHECKING:
    from kgrag.config import Neo4jSettings

T = TypeVar("T")

# Servers that speak Bolt but need some statements in another form (cypher/<dialect>/).
_DIALECT_BY_AGENT = {"arcadedb": "arcadedb"}
# Notifications the server need not send: Neo4j reports every label, relationship type or
# property its database has never held (all of them in a new database; AuditEntry until the
# first alias change), and the driver logs each as a warning. Deprecations and performance
# notes still come through.
_QUIET = [neo4j.NotificationDisabledClassification.UNRECOGNIZED]


class _SharedDrivers:
    """Drivers keyed by (process, url, auth, retry budget) and reference-counted: every store
    of a process that talks to one server shares one connection pool. The process id is part
    of the key because a driver must not cross a fork (gunicorn workers)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._drivers: dict[tuple, tuple[neo4j.Driver, int]] = {}

    def acquire(self, settings: Neo4jSettings) -> tuple[tuple, neo4j.Driver]:
        key = (os.getpid(), settings.url, settings.user, settings.password, settings.max_retry_s)
        with self._lock:
            driver, users = self._drivers.get(key, (None, 0))
            if driver is None:
                auth = (settings.user, settings.password) if settings.password is not None else None
                try:
                    driver = neo4j.GraphDatabase.driver(
                        settings.url, auth=auth, max_transaction_retry_time=settings.max_retry_s,
                        notifications_disabled_classifications=_QUIET,
                    )
                except (DriverError, Neo4jError, ValueError) as exc:
                    raise StoreError(f"Neo4j at {settings.url}: cannot create a driver: {exc}") from exc
            self._drivers[key] = (driver, users + 1)
            return key, driver

    def release(self, key: tuple) -> None:
        with self._lock:
            driver, users = self._drivers.get(key, (None, 0))
            if driver is None:
                return
            if users > 1:
                self._drivers[key] = (driver, users - 1)
                return
            del self._drivers[key]
        driver.close()


SHARED_DRIVERS = _SharedDrivers()


class CypherRunner:
    """Runs named statements in managed transactions against one database."""

    def __init__(self, settings: Neo4jSettings, dialect: str | None = None, loader_root: str | None = None):
        self.settings = settings
        self.where = f"Neo4j at {settings.url}" + (f" (database {settings.database!r})" if settings.database else "")
        self._key, self.driver = SHARED_DRIVERS.acquire(settings)
        try:
            self.driver.verify_connectivity()
            self.agent = self.driver.get_server_info().agent
        except (DriverError, Neo4jError, OSError) as exc:
            self.close()
            raise StoreError(f"{self.where}: cannot connect: {exc}") from exc
        if dialect is None:
            dialect = next((d for marker, d in _DIALECT_BY_AGENT.items() if marker in self.agent.lower()), None)
        self.dialect = dialect
        self.cypher = CypherLoader(loader_root, dialect) if loader_root else CypherLoader(dialect=dialect)
        self._closed = False

    # -- transactions ----------------------------------------------------------------------
    def read(self, what: str, work: Callable[[neo4j.ManagedTransaction], T]) -> T:
        return self._execute(what, work, write=False)

    def write(self, what: str, work: Callable[[neo4j.ManagedTransaction], T]) -> T:
        """One transaction: committed when ``work`` returns, rolled back when it raises (a
        StoreError raised inside is the caller's refusal and is not retried)."""
        return self._execute(what, work, write=True)

    def _execute(self, what: str, work: Callable, *, write: bool) -> Any:
        if self._closed:
            raise StoreError(f"{self.where}: {what}: the store is closed")
        try:
            with self.driver.session(database=self.settings.database) as session:
                run = session.execute_write if write else session.execute_read
                return run(work)
        except (DriverError, Neo4jError) as exc:
            raise StoreError(f"{self.where}: {what}: {exc}") from exc

    def rows(self, tx: neo4j.ManagedTransaction, name: str, **params: Any) -> list[dict[str, Any]]:
        """Run a statement by name with bound parameters; its records as dicts."""
        return [record.data() for record in tx.run(self.cypher.statement(name), params)]

    def run_script(self, name: str) -> None:
        """Each statement of a script in its own transaction (schema changes may not share
        one with anything else)."""
        for statement in self.cypher.script(name):
            self.write(f"run {name}", lambda tx, s=statement: tx.run(s).consume())

    def close(self) -> None:
        if getattr(self, "_key", None) is not None:
            SHARED_DRIVERS.release(self._key)
            self._key = None
        self._closed = True
