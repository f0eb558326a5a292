"""A port in use: one line naming the way out and exit 2, before anything else prints."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def taken_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield sock.getsockname()[1]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "KGRAG_DATA_DIR": str(tmp_path / "kb"), "PYTHONPATH": str(REPO)}


def test_kgrag_serve_on_a_port_in_use_says_so_in_one_line_and_exits_2(taken_port, tmp_path):
    run = subprocess.run([sys.executable, "-m", "kgrag.cli", "serve", "--port", str(taken_port)],
                         capture_output=True, text=True, timeout=120, env=_env(tmp_path), cwd=tmp_path)
    assert run.returncode == 2, run
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith(f"port {taken_port} is in use; `kgrag serve --port ")
    assert lines[0].endswith("` or KGRAG_SERVER__PORT")
    suggested = int(lines[0].split("--port ")[1].split("`")[0])
    with socket.socket() as probe:  # the port it suggests is free
        probe.bind(("127.0.0.1", suggested))


def test_scripts_serve_checks_the_port_before_setup_prints_anything(taken_port, tmp_path):
    env = {**_env(tmp_path), "KGRAG_SERVER__PORT": str(taken_port)}
    run = subprocess.run(["bash", str(REPO / "scripts" / "serve")], capture_output=True, text=True, timeout=120,
                         env=env, stdin=subprocess.DEVNULL)
    assert run.returncode == 2, run
    assert run.stdout == "" and len(run.stderr.splitlines()) == 1, run
    assert run.stderr.startswith(f"port {taken_port} is in use; `scripts/serve --port ")
    assert "KGRAG_SERVER__PORT" in run.stderr
