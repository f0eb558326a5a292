"""An installed kgrag (a wheel, not the checkout) finds every Cypher statement without
KGRAG_CYPHER_DIR: the wheel carries the repository's top-level cypher/ as kgrag/cypher.

The wheel is built from this repository with the build backend of the test extras (no
network), installed without dependencies into a fresh virtualenv made from the base
interpreter, and asked — from outside the repository — for every statement the Neo4j adapter
names. Only the Cypher loader is imported there, which needs nothing but the standard library.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kgrag.stores.neo4j.cypher_loader import REPOSITORY_CYPHER_DIR, CypherLoader

REPO = Path(__file__).resolve().parents[1]
NEO4J_PACKAGE = REPO / "kgrag" / "stores" / "neo4j"

PROBE = """
import json, sys
from pathlib import Path
import kgrag
from kgrag.stores.neo4j.cypher_loader import CypherLoader

names, scripts = json.loads(sys.argv[1])
reference, arcadedb = CypherLoader(), CypherLoader(dialect="arcadedb")
print(json.dumps({
    "package": str(Path(kgrag.__file__).parent),
    "root": str(reference.root),
    "statements": {n: reference.statement(n) for n in names},
    "scripts": {n: reference.script(n) for n in scripts},
    "arcadedb_scripts": {n: arcadedb.script(n) for n in scripts},
    "files": sorted(str(p.relative_to(reference.root)) for p in reference.root.rglob("*.cypher")),
}))
"""


def statement_names() -> tuple[list[str], list[str]]:
    """(statements, scripts) the Neo4j adapter runs by name."""
    source = "\n".join(p.read_text(encoding="utf-8") for p in sorted(NEO4J_PACKAGE.glob("*.py")))
    statements = set(re.findall(r'rows\(\s*tx,\s*"([a-z_]+)"', source))
    scripts = set(re.findall(r'run_script\("([a-z_]+)"\)', source))
    return sorted(statements), sorted(scripts)


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)
    assert done.returncode == 0, f"{command[:4]} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def installed_python(tmp_path_factory) -> Path:
    """The interpreter of a fresh virtualenv holding only the kgrag wheel built from the repo."""
    root = tmp_path_factory.mktemp("wheel")
    dist = root / "dist"
    # --no-build-isolation: the backend (hatchling) comes from the test extras, not the network.
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
          "--wheel-dir", str(dist), str(REPO)])
    wheels = list(dist.glob("kgrag-*.whl"))
    assert len(wheels) == 1, wheels
    venv = root / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    _run([base, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
          "--disable-pip-version-check", str(wheels[0])])
    return python


def test_the_adapter_names_statements_to_check():
    statements, scripts = statement_names()
    assert len(statements) > 40 and scripts == ["schema", "schema_fulltext"]


def test_an_installed_wheel_finds_every_cypher_statement(installed_python, tmp_path):
    statements, scripts = statement_names()
    env = {k: v for k, v in os.environ.items() if k not in ("KGRAG_CYPHER_DIR", "PYTHONPATH", "PYTHONHOME")}
    done = _run([str(installed_python), "-I", "-c", PROBE, json.dumps([statements, scripts])], cwd=tmp_path, env=env)
    found = json.loads(done.stdout)

    venv = installed_python.parent.parent
    package = Path(found["package"])
    assert venv in package.parents and REPO not in package.parents  # the installed copy, not the checkout
    assert Path(found["root"]) == package / "cypher"
    # Every statement and script the adapter names, as the repository's folder holds it.
    repository, repository_arcadedb = CypherLoader(REPOSITORY_CYPHER_DIR), CypherLoader(REPOSITORY_CYPHER_DIR, "arcadedb")
    assert found["statements"] == {n: repository.statement(n) for n in statements}
    assert found["scripts"] == {n: repository.script(n) for n in scripts}
    assert found["arcadedb_scripts"] == {n: repository_arcadedb.script(n) for n in scripts}
    # ... and every file of the folder (the Browser guide, the dialect overrides) came along.
    assert found["files"] == sorted(str(p.relative_to(REPOSITORY_CYPHER_DIR)) for p in REPOSITORY_CYPHER_DIR.rglob("*.cypher"))
