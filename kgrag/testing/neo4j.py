"""A local Neo4j 5 Community server run from Maven Central's jars, for the tests and for teams
without Docker (docker-compose.yml stays the production route).

``engines/neo4j/pom.xml`` names the server and the Browser app; Maven resolves them once per
machine into its local repository (~/.m2) and writes their classpath, which is cached beside
the pom (``engines/neo4j/target/``) until the pom changes. The server is the plain JVM
(``org.neo4j.server.CommunityEntryPoint``) with a ``neo4j.conf`` written into its home folder:
Bolt and HTTP (Neo4j Browser at /browser/) on 127.0.0.1 only, a password kept in
``<home>/password`` (mode 0600), made on the first start.

    server = Neo4jServer.start(tmp_path / "neo4j")          # waits until Bolt answers
    store = Neo4jGraphStore(server.settings())
    server.stop()

A server started by a test dies with the test process (Linux's parent-death signal); one
started with ``detach=True`` (``scripts/neo4j start``) runs until ``scripts/neo4j stop``.
Command line: ``python -m kgrag.testing.neo4j {fetch,start,stop,status} [--home DIR]``.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kgrag.config import Neo4jSettings
from kgrag.errors import StoreError

ENGINE_POM = Path(__file__).resolve().parents[2] / "engines" / "neo4j" / "pom.xml"
ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
USER = "neo4j"
_INITIAL_PASSWORD = "neo4j"  # every new Neo4j's, usable only to set another one
JAVA_MAJORS = (17, 21)  # the Java releases Neo4j 5.26 supports
# JVM flags the Neo4j launcher would add that matter here: Netty and the page cache use NIO
# internals, and an out-of-memory server should exit rather than limp on.
_JVM_FLAGS = [
    "-XX:+ExitOnOutOfMemoryError", "-XX:-OmitStackTraceInFastThrow", "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true", "-Dlog4j2.disable.jmx=true",
    "--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
]


class Neo4jUnavailable(StoreError, RuntimeError):
    """The local Neo4j cannot be resolved or started (no Maven, no Java 17/21, a port taken,
    the server exiting); the message says which and what to do."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the jars ---------------------------------------------------------------------------------
def pinned_versions(pom: Path = ENGINE_POM) -> dict[str, str]:
    """The pom's version properties, e.g. {'neo4j.version': '5.26.30', ...}."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    props = ET.parse(pom).getroot().find("m:properties", ns)
    return {el.tag.split("}")[1]: (el.text or "").strip() for el in (props if props is not None else [])}


def resolve_classpath(pom: Path = ENGINE_POM, *, log=None) -> list[Path]:
    """The server's jars, resolved by Maven from ``pom`` (downloaded into ~/.m2 the first time
    on a machine, a few minutes; a few seconds later). Cached per pom content."""
    if not pom.is_file():
        raise Neo4jUnavailable(f"{pom} does not exist: the local Neo4j runs from a kgrag checkout")
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    cached = pom.parent / "target" / f"classpath-{digest}.txt"
    if cached.is_file():
        jars = [Path(p) for p in cached.read_text().split(os.pathsep) if p]
        if jars and all(j.is_file() for j in jars):
            return jars
    maven = os.environ.get("KGRAG_MAVEN") or shutil.which("mvn")
    if not maven:
        raise Neo4jUnavailable("Maven (mvn) is not on PATH: apt-get install maven (it resolves the Neo4j jars)")
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(".partial")
    if log:
        log(f"resolving the Neo4j jars with Maven ({pom}; the first time on a machine downloads ~140 MB)")
    started = time.monotonic()
    run = subprocess.run(
        [maven, "-B", "-q", "-f", str(pom), "dependency:build-classpath", f"-Dmdep.outputFile={partial}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_java_env(),
    )
    if run.returncode != 0 or not partial.is_file():
        raise Neo4jUnavailable(f"Maven could not resolve {pom} (exit {run.returncode}): {run.stdout[-1500:]}")
    partial.replace(cached)
    if log:
        log(f"Neo4j jars resolved in {time.monotonic() - started:.0f} s")
    return [Path(p) for p in cached.read_text().split(os.pathsep) if p]


# -- Java -------------------------------------------------------------------------------------
def _java_env() -> dict[str, str]:
    """The environment with JAVA_HOME on a supported JDK when the default one is not."""
    env = dict(os.environ)
    java = java_command()
    env["JAVA_HOME"] = str(Path(java).resolve().parents[1])
    return env


def java_command() -> str:
    """``KGRAG_NEO4J_JAVA``, else $JAVA_HOME/bin/java, else ``java`` on PATH, else a JDK 17 or 21
    under /usr/lib/jvm; it must be Java 17 or 21."""
    candidates = [os.environ.get("KGRAG_NEO4J_JAVA"), os.environ.get("JAVA_HOME") and
                  str(Path(os.environ["JAVA_HOME"]) / "bin" / "java"), shutil.which("java")]
    candidates += sorted(str(p) for p in Path("/usr/lib/jvm").glob("*/bin/java"))
    seen: list[str] = []
    for java in candidates:
        if not java or java in seen or not Path(java).is_file():
            continue
        seen.append(java)
        major = java_major(java)
        if major in JAVA_MAJORS:
            return java
        if java == os.environ.get("KGRAG_NEO4J_JAVA"):
            raise Neo4jUnavailable(f"KGRAG_NEO4J_JAVA={java} is Java {major}; Neo4j 5.26 needs 17 or 21")
    raise Neo4jUnavailable(f"no Java 17 or 21 found (tried {seen or 'none'}); apt-get install openjdk-17-jre-headless")


def java_major(java: str) -> int | None:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r'version "(\d+)', out)
    return int(found.group(1)) if found else None


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the server gets SIGTERM when the process that started it dies."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


# -- the server -------------------------------------------------------------------------------
@dataclass
class Neo4jServer:
    home: Path
    bolt_port: int
    http_port: int
    password: str
    pid: int
    process: subprocess.Popen | None = None  # None: a detached server found by its pid file
    agent: str = ""  # the server's own name and version, e.g. Neo4j/5.26.30
    started_s: float = 0.0  # from launch until Bolt answered with the password

    @property
    def url(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    @property
    def browser_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/browser/"

    def settings(self) -> Neo4jSettings:
        return Neo4jSettings(url=self.url, user=USER, password=self.password, max_retry_s=5.0)

    @classmethod
    def start(cls, home: Path | str, *, bolt_port: int = 0, http_port: int = 0, heap: str = "1g",
              pagecache: str = "256m", timeout_s: float = 180.0, detach: bool = False, log=None) -> Neo4jServer:
        """Start a server whose files live under ``home`` (created), on the given ports (0: free
        ones), and wait until Bolt answers with its password; raises Neo4jUnavailable."""
        home = Path(home).resolve()
        running = running_server(home)
        if running is not None:
            raise Neo4jUnavailable(f"a Neo4j already runs from {home} (pid {running.pid}, {running.url})")
        classpath = resolve_classpath(log=log)
        java = java_command()
        bolt_port, http_port = bolt_port or free_port(), http_port or free_port()
        for port in (bolt_port, http_port):
            if not _port_free(port):
                raise Neo4jUnavailable(f"port {port} on 127.0.0.1 is taken (another Neo4j?); choose another")
        for folder in ("conf", "logs", "run"):
            (home / folder).mkdir(parents=True, exist_ok=True)
        password = _password(home)
        (home / "conf" / "neo4j.conf").write_text(_config(bolt_port, http_port, pagecache))
        command = [java, f"-Xms{heap}", f"-Xmx{heap}", *_JVM_FLAGS, "-cp", os.pathsep.join(map(str, classpath)),
                   ENTRY_POINT, f"--home-dir={home}", f"--config-dir={home / 'conf'}"]
        console = open(home / "logs" / "console.log", "wb")  # the child writes to it; closed here after the fork
        began = time.monotonic()
        try:
            process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT, cwd=home,
                start_new_session=detach, preexec_fn=None if detach else _die_with_parent,
            )
        finally:
            console.close()
        server = cls(home, bolt_port, http_port, password, process.pid, process)
        try:
            server.agent = _wait_for_bolt(server, process, began + timeout_s)
        except BaseException:
            server.stop()
            raise
        server.started_s = time.monotonic() - began
        (home / "run" / "kgrag-neo4j.json").write_text(
            f'{{"pid": {process.pid}, "bolt_port": {bolt_port}, "http_port": {http_port}}}\n')
        return server

    def stop(self, timeout_s: float = 90.0) -> None:
        """SIGTERM (Neo4j checkpoints and exits, ~10 s), SIGKILL after ``timeout_s``."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout_s)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        elif _alive(self.pid):
            os.kill(self.pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout_s
            while _alive(self.pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _alive(self.pid):
                os.kill(self.pid, signal.SIGKILL)
        (self.home / "run" / "kgrag-neo4j.json").unlink(missing_ok=True)


def running_server(home: Path | str) -> Neo4jServer | None:
    """The server started from ``home`` that still runs (from its run file), else None."""
    import json

    home = Path(home).resolve()
    run_file = home / "run" / "kgrag-neo4j.json"
    try:
        info = json.loads(run_file.read_text())
    except (OSError, ValueError):
        return None
    if not _alive(info["pid"]) or not _is_neo4j(info["pid"]):
        run_file.unlink(missing_ok=True)
        return None
    return Neo4jServer(home, info["bolt_port"], info["http_port"], _password(home), info["pid"])


def _config(bolt_port: int, http_port: int, pagecache: str) -> str:
    return "\n".join([
        "# Written by kgrag/testing/neo4j.py on every start (edit the code, not this file).",
        "server.default_listen_address=127.0.0.1",
        "server.default_advertised_address=127.0.0.1",
        f"server.bolt.listen_address=127.0.0.1:{bolt_port}",
        f"server.bolt.advertised_address=127.0.0.1:{bolt_port}",
        f"server.http.listen_address=127.0.0.1:{http_port}",
        f"server.http.advertised_address=127.0.0.1:{http_port}",
        "server.https.enabled=false",
        f"server.memory.pagecache.size={pagecache}",
        "dbms.security.auth_enabled=true",
        "dbms.usage_report.enabled=false",
        "client.allow_telemetry=false",
        "",
    ])


def _password(home: Path) -> str:
    path = home / "password"
    if not path.is_file():
        home.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(secrets.token_urlsafe(18) + "\n")
    return path.read_text().strip()


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_neo4j(pid: int) -> bool:
    try:
        return ENTRY_POINT.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc: trust the run file


def _log_tail(home: Path) -> str:
    lines: list[str] = []
    for name in ("console.log", "neo4j.log"):
        path = home / "logs" / name
        if path.is_file():
            lines += path.read_text(errors="replace").splitlines()[-12:]
    return "\n".join(lines)[-2000:]


def _wait_for_bolt(server: Neo4jServer, process: subprocess.Popen, deadline: float) -> str:
    """Poll until Bolt accepts the password (setting it over the initial one on a first start);
    returns the server agent."""
    import neo4j
    from neo4j.exceptions import AuthError, ServiceUnavailable, SessionExpired

    while True:
        if process.poll() is not None:
            raise Neo4jUnavailable(f"Neo4j exited with {process.returncode} while starting:\n{_log_tail(server.home)}")
        if time.monotonic() > deadline:
            raise Neo4jUnavailable(f"Neo4j did not answer on {server.url} in time:\n{_log_tail(server.home)}")
        if _port_free(server.bolt_port):
            time.sleep(0.25)
            continue
        try:
            with neo4j.GraphDatabase.driver(server.url, auth=(USER, server.password)) as driver:
                driver.verify_connectivity()
                return driver.get_server_info().agent
        except AuthError:
            _set_initial_password(server)
        except (ServiceUnavailable, SessionExpired, OSError):
            time.sleep(0.25)


def _set_initial_password(server: Neo4jServer) -> None:
    import neo4j
    from neo4j.exceptions import AuthError

    try:
        with neo4j.GraphDatabase.driver(server.url, auth=(USER, _INITIAL_PASSWORD)) as driver:
            with driver.session(database="system") as session:
                session.run("ALTER CURRENT USER SET PASSWORD FROM $old TO $new",
                            old=_INITIAL_PASSWORD, new=server.password).consume()
    except AuthError as exc:
        raise Neo4jUnavailable(
            f"{server.home}: the server refuses the password in {server.home / 'password'} and the initial one "
            f"(its data folder belongs to another password; move {server.home / 'data'} away): {exc}") from exc


# -- command line -----------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/neo4j", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["fetch", "start", "stop", "status"])
    parser.add_argument("--home", type=Path, default=Path(os.environ.get("KGRAG_DATA_DIR", "data")) / "neo4j",
                        help="the server's folder: conf/, data/, logs/, password (default: $KGRAG_DATA_DIR/neo4j)")
    parser.add_argument("--bolt-port", type=int, default=7687)
    parser.add_argument("--http-port", type=int, default=7474)
    parser.add_argument("--heap", default="1g", help="JVM heap (default 1g)")
    parser.add_argument("--pagecache", default="512m", help="Neo4j page cache (default 512m)")
    args = parser.parse_args(argv)

    def say(message: str) -> None:
        print(f"[neo4j] {message}", flush=True)

    try:
        if args.command == "fetch":
            jars = resolve_classpath(log=say)
            versions = pinned_versions()
            say(f"Neo4j {versions.get('neo4j.version')} Community and Browser {versions.get('neo4j-browser.version')}: "
                f"{len(jars)} jars in Maven's local repository; Java: {java_command()}")
            return 0
        if args.command == "status":
            server = running_server(args.home)
            if server is None:
                say(f"not running (home {args.home.resolve()})")
                return 3
            say(f"running: pid {server.pid}, {server.url}, Browser {server.browser_url}")
            return 0
        if args.command == "stop":
            server = running_server(args.home)
            if server is None:
                say(f"not running (home {args.home.resolve()})")
                return 0
            server.stop()
            say(f"stopped (pid {server.pid})")
            return 0
        server = Neo4jServer.start(args.home, bolt_port=args.bolt_port, http_port=args.http_port, heap=args.heap,
                                   pagecache=args.pagecache, detach=True, log=say)
    except Neo4jUnavailable as exc:
        say(f"error: {exc}")
        return 1
    password_file = server.home / "password"
    say(f"{server.agent} Community running (pid {server.pid}, started in {server.started_s:.0f} s)")
    say(f"Bolt {server.url}, user {USER}, password in {password_file}")
    say(f"Neo4j Browser: {server.browser_url}")
    print(f"\nexport KGRAG_GRAPH_STORE=neo4j KGRAG_NEO4J__URL={server.url} KGRAG_NEO4J__USER={USER} "
          f"KGRAG_NEO4J__PASSWORD=\"$(cat {password_file})\"\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
