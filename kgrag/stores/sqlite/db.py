"""One SQLite file shared by threads: connection setup, file identity, transactions, errors.

The embedded stores (chunk index, graph, write journal) and the deployment's own small stores
(conversations, feedback) use this. One connection serves every thread
(the Flask server calls stores from its worker threads), serialized by a re-entrant lock;
WAL lets another process (a CLI ingest) write while this one reads.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from kgrag.errors import StoreDamaged, StoreError, damage_message

T = TypeVar("T")

# PRAGMA application_id values: a chunk-index file opened as a graph (or any foreign SQLite
# file) is refused instead of silently gaining a second set of tables.
CHUNK_INDEX_APP_ID = 0x6B67_4331  # "kgC1"
GRAPH_STORE_APP_ID = 0x6B67_4731  # "kgG1"
JOURNAL_APP_ID = 0x6B67_4A31  # "kgJ1"
CONVERSATIONS_APP_ID = 0x6B67_5631  # "kgV1"
FEEDBACK_APP_ID = 0x6B67_4631  # "kgF1"
_KIND_BY_APP_ID = {CHUNK_INDEX_APP_ID: "kgrag chunk index", GRAPH_STORE_APP_ID: "kgrag graph store",
                   JOURNAL_APP_ID: "kgrag write journal", CONVERSATIONS_APP_ID: "kgrag conversation store",
                   FEEDBACK_APP_ID: "kgrag feedback store"}


class SqliteDatabase:
    """A SQLite file with a fixed schema, identified by ``app_id`` and ``schema_version``.

    ``additions`` are idempotent statements (``CREATE INDEX IF NOT EXISTS``) run on every open:
    an index added after a file was created is built there once, with no version change and no
    re-ingest. ``adopt_unmarked``: a file with tables but no application id (written before the
    store used this class) is taken as this kind, its schema completed and stamped."""

    def __init__(self, path: Path | str, *, app_id: int, schema_version: int, schema: str,
                 additions: str = "", adopt_unmarked: bool = False):
        self.path = str(path)
        self.lock = threading.RLock()
        # Write transactions begun through this object: with ``data_version`` (commits by other
        # connections) it tells a cache built from the file whether it is stale.
        self.writes = 0
        self._depth = 0  # write blocks open on this connection (only the lock's holder reads it)
        self.app_id = app_id
        self._adopt_unmarked = adopt_unmarked
        # An empty file is a new database to SQLite (and one another process is creating now);
        # a file of another kind is refused by the schema check, naming both kinds.
        if self.path != ":memory:" and (damage := header_damage(self.path, None, empty_ok=True)) is not None:
            raise StoreDamaged(self.path, damage)
        try:
            self.conn = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=30.0
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open SQLite file: {exc}") from exc
        self._identity = _file_identity(self.path)
        self._checked: tuple[tuple, list[str]] | None = None  # (file state, quick_check problems)
        self.quick_checks = 0  # how many ran (tests)
        self._kept: dict[Hashable, tuple[tuple[int, int], Any]] = {}  # see kept(): key → (stamp, value)
        try:
            self._prepare(app_id, schema_version, schema, additions)
        except sqlite3.Error as exc:
            self.conn.close()
            if is_damage(exc):
                raise StoreDamaged(self.path, str(exc)) from exc
            raise StoreError(f"{self.path}: not a usable SQLite file: {exc}") from exc
        except StoreError:
            self.conn.close()
            raise

    def _prepare(self, app_id: int, schema_version: int, schema: str, additions: str) -> None:
        conn = self.conn
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")  # durable at checkpoints; WAL keeps it consistent
        # Checked and created under the write lock: two processes opening a new file at once
        # (an ingest and a reader) must not both try to create the schema.
        conn.execute("BEGIN IMMEDIATE")
        try:
            self._check_or_create(app_id, schema_version, schema)
            for statement in _statements(additions):
                conn.execute(statement)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _check_or_create(self, app_id: int, schema_version: int, schema: str) -> None:
        conn = self.conn
        found_app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        has_tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
        if found_app_id == 0 and has_tables and self._adopt_unmarked:
            has_tables = False  # its tables are ours: CREATE ... IF NOT EXISTS completes them
        if found_app_id != app_id and (found_app_id != 0 or has_tables):
            found = _KIND_BY_APP_ID.get(found_app_id, "not a kgrag store")
            raise StoreError(
                f"{self.path}: expected a {_KIND_BY_APP_ID[app_id]} file, found {found} "
                f"(application_id {found_app_id:#x})"
            )
        if has_tables:
            found_version = conn.execute("PRAGMA user_version").fetchone()[0]
            if found_version != schema_version:
                raise StoreError(
                    f"{self.path}: schema version {found_version}, this build reads "
                    f"{schema_version}; re-ingest into a new file"
                )
            return
        for statement in _statements(schema):
            conn.execute(statement)
        conn.execute(f"PRAGMA application_id={int(app_id)}")
        conn.execute(f"PRAGMA user_version={int(schema_version)}")

    @contextmanager
    def write(self, what: str) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed when the block ends, rolled back on any exception.

        BEGIN IMMEDIATE takes the write lock up front, so values read inside the block (e.g.
        the next row id) cannot be changed by another process before the commit.
        """
        with self.lock:
            conn = self._open_conn(what)
            self.writes += 1
            if self._depth:  # inside another write of this thread: part of its transaction
                yield from self._nested(conn, what)
                return
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._failed(what, exc) from exc
            self._depth = 1
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._failed(what, exc) from exc
                raise
            finally:
                self._depth = 0

    def _nested(self, conn: sqlite3.Connection, what: str) -> Iterator[sqlite3.Connection]:
        """A write inside a write: a savepoint, so its own failure undoes only its part (as a
        write of its own would have been undone) and the outer transaction decides the rest."""
        savepoint = f"kgrag_{self._depth}"
        conn.execute(f"SAVEPOINT {savepoint}")
        self._depth += 1
        try:
            yield conn
            conn.execute(f"RELEASE {savepoint}")
        except BaseException as exc:
            conn.execute(f"ROLLBACK TO {savepoint}")
            conn.execute(f"RELEASE {savepoint}")
            if isinstance(exc, sqlite3.Error):
                raise self._failed(what, exc) from exc
            raise
        finally:
            self._depth -= 1

    @contextmanager
    def read(self, what: str) -> Iterator[sqlite3.Connection]:
        """The connection, held under the lock; SQLite errors become StoreError."""
        with self.lock:
            conn = self._open_conn(what)
            try:
                yield conn
            except sqlite3.Error as exc:
                raise self._failed(what, exc) from exc

    def _failed(self, what: str, exc: sqlite3.Error) -> StoreError:
        """The StoreError for a SQLite error: StoreDamaged when the file is damaged."""
        if is_damage(exc):
            return StoreDamaged(self.path, f"{what}: {exc}")
        return StoreError(f"{self.path}: {what}: {exc}")

    def problems(self) -> list[str]:
        """Why this file cannot be trusted now ([] when it can): removed or replaced since it
        was opened (the open connection would keep serving the unlinked file), or failing
        ``PRAGMA quick_check`` (36 ms on a 32 MB chunk index, 8.5 s for the 3.8 GB of a 100k
        passage knowledge base). The check reruns only when the file's identity, size or
        modification time (or its WAL's) changed; a passed check is also noted beside the file
        (``<file>.checked``), so a restart on unchanged files does not repeat it."""
        if self.path == ":memory:":
            return []
        now = _file_identity(self.path)
        if now is None:
            return [f"{Path(self.path).name} was removed since the store opened it"]
        if self._identity is not None and now != self._identity:
            return [f"{Path(self.path).name} was replaced since the store opened it"]
        state = (now, _stat_state(self.path), _wal_state(f"{self.path}-wal"))
        if self._checked is not None and self._checked[0] == state:
            return self._checked[1]
        # Cheap (a stat and the first 100 bytes), so it runs whenever the file changed: a file
        # emptied, cut short or overwritten under a running server is named at once, before
        # quick_check (which may take seconds) or a query meets it.
        damage = header_damage(self.path, self.app_id)
        if damage is not None:
            self._checked = (state, [damage_message(Path(self.path).name, damage)])
            return self._checked[1]
        if self._checked is None and _noted_sound(self.path, state):
            self._checked = (state, [])
        if self._checked is None or self._checked[0] != state:
            self.quick_checks += 1
            name = Path(self.path).name
            try:
                rows = _quick_check(self.path)
                found = [] if rows == ["ok"] else [damage_message(name, f"quick_check: {rows[0]}")]
            except sqlite3.Error as exc:
                found = [damage_message(name, f"quick_check: {exc}")]
            self._checked = (state, found)
            _note(self.path, state, sound=not found)
        return self._checked[1]

    def kept(self, conn: sqlite3.Connection, key: Hashable, read: Callable[[], T]) -> T:
        """``read()``'s value, kept until a write through this object or a commit by another
        connection (``PRAGMA data_version``); caller holds the lock. For figures a hot path or a
        poll asks for again and again (a table's row count, the stores' counts)."""
        stamp = (conn.execute("PRAGMA data_version").fetchone()[0], self.writes)
        held = self._kept.get(key)
        if held is None or held[0] != stamp:
            held = self._kept[key] = (stamp, read())
        return held[1]

    def kept_each(self, conn: sqlite3.Connection, name: Hashable, keys: Iterable[str],
                  read: Callable[[list[str]], dict[str, T]], missing: T, most: int | None = None) -> dict[str, T]:
        """Each key's value, kept as ``kept`` keeps one: ``read`` is asked only for the keys not
        kept yet (a key it leaves out gets ``missing``). At most ``most`` keys are kept: past
        that the kept values start over. Caller holds the lock."""
        known: dict[str, T] = self.kept(conn, name, dict)
        if most is not None and len(known) > most:
            known.clear()
        wanted = list(dict.fromkeys(keys))
        new = [k for k in wanted if k not in known]
        if new:
            found = read(new)
            known.update((k, found.get(k, missing)) for k in new)
        return {k: known[k] for k in wanted}

    def data_version(self) -> int:
        """Changes whenever *another* connection commits to the file (PRAGMA data_version):
        lets in-memory caches notice a concurrent ingest from another process."""
        with self.read("data_version") as conn:
            return conn.execute("PRAGMA data_version").fetchone()[0]

    def _open_conn(self, what: str) -> sqlite3.Connection:
        if self.conn is None:
            raise StoreError(f"{self.path}: {what}: the store is closed")
        return self.conn

    def close(self) -> None:
        with self.lock:
            if self.conn is not None:
                self.conn.close()
                self.conn = None  # type: ignore[assignment]


_HEADER = b"SQLite format 3\x00"
# SQLite's primary result codes for a file that is not (or no longer) a sound database.
_DAMAGE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


def is_damage(exc: sqlite3.Error) -> bool:
    """Whether SQLite's error says the file is damaged (not merely busy, locked or full)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in _DAMAGE_CODES


def header_damage(path: str, app_id: int | None, empty_ok: bool = False) -> str | None:
    """What the first 100 bytes and the size of an existing store file say is wrong with it, or
    None: emptied, no SQLite header, another kind of file, or shorter than the pages its header
    counts (truncated); with ``app_id``, a file of another kind. A missing file is no damage
    (the store creates it). A checkpoint of
    another process can extend the file just after it wrote the header: a shortfall is looked
    at again once before it is reported."""
    for attempt in range(2):
        try:
            with open(path, "rb") as f:
                head = f.read(100)
                size = os.fstat(f.fileno()).st_size
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"cannot be read: {exc.strerror or exc}"
        if size == 0:
            return None if empty_ok else "emptied: 0 bytes"
        if len(head) < 100 or not head.startswith(_HEADER):
            return "no SQLite header: overwritten or not a database"
        found_app_id = int.from_bytes(head[68:72], "big")
        if app_id is not None and found_app_id not in (0, app_id):
            return f"holds a {_KIND_BY_APP_ID.get(found_app_id, 'file of another program')}, not a {_KIND_BY_APP_ID.get(app_id, 'kgrag store')}"
        page_size = int.from_bytes(head[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        pages = int.from_bytes(head[28:32], "big")
        # The page count is valid when "version-valid-for" equals the change counter.
        if head[92:96] != head[24:28] or size >= pages * page_size:
            return None
        if attempt == 0:
            time.sleep(0.05)
    return f"truncated: {size:,} of {pages * page_size:,} bytes"


def _file_identity(path: str) -> tuple[int, int] | None:
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _stat_state(path: str) -> tuple[int, int] | None:
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _quick_check(path: str) -> list[str]:
    """On a connection of its own, read-only: the store's connection (and its lock) stays free
    for searches meanwhile (seconds on a large file: a server's first start after an ingest
    checks while it loads the models and reads the graph)."""
    conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
    try:
        return [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
    finally:
        conn.close()


def _wal_state(path: str) -> tuple[int, int] | None:
    """An empty WAL is no WAL: opening the file may create one, which changes nothing."""
    state = _stat_state(path)
    return state if state is not None and state[0] > 0 else None


def _noted_sound(path: str, state: tuple) -> bool:
    try:
        noted = json.loads(Path(f"{path}.checked").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(noted, dict) and noted.get("state") == json.loads(json.dumps(state))


def _note(path: str, state: tuple, *, sound: bool) -> None:
    """Best effort (a read-only data dir checks at every start); a failed check removes it."""
    note = Path(f"{path}.checked")
    try:
        if sound:
            note.write_text(json.dumps({"state": state, "quick_check": "ok"}), encoding="utf-8")
        else:
            note.unlink(missing_ok=True)
    except OSError:
        pass


def _statements(schema: str) -> list[str]:
    return [s.strip() for s in schema.split(";") if s.strip()]


def to_json(value: dict[str, Any], what: str) -> str:
    """Metadata as JSON text; a value JSON cannot hold is refused, naming its owner."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what}: metadata is not JSON-serializable: {exc}") from exc


# "x IN_JSON" with one bound id_list(...) parameter: membership in a list of any length.
IN_JSON = "IN (SELECT value FROM json_each(?))"


def id_list(values: Any) -> str:
    """A list of ids as one bound JSON parameter, read in SQL with ``json_each(?)``: no
    placeholder-count limit, no SQL built from values."""
    return json.dumps(list(values), ensure_ascii=False)
