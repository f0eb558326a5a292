"""What an evaluation measured: the code (a commit, or the package version outside a git
checkout), when, on how many CPUs, and the settings its figures depend on. ``kgrag eval --json``
records it; ``kgrag eval report`` prints it beside every table, so a figure always names its run.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from pathlib import Path
from typing import Any

import kgrag
from kgrag.config import Settings

PACKAGE_DIR = Path(kgrag.__file__).resolve().parent
# Settings that may hold a secret (a key, or a URL with a password in it) are never recorded.
_SECRET_LLM_FIELDS = {"api_key", "api_base"}


def code_version(package_dir: Path = PACKAGE_DIR) -> str:
    """``git describe --always --dirty`` of the checkout the package was imported from (a
    commit id, ``-dirty`` when files differ from it); ``v<version>`` when the package is not
    the top of a git checkout's ``kgrag/`` (an installed wheel) or git is not there."""
    root = package_dir.parent
    try:
        top = _git(root, "rev-parse", "--show-toplevel")
        if Path(top).resolve() != root.resolve():  # a wheel inside somebody else's repository
            raise LookupError(top)
        return _git(root, "describe", "--always", "--dirty", "--abbrev=7")
    except (OSError, LookupError, subprocess.SubprocessError):
        return f"v{kgrag.__version__}"


def _git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise LookupError(proc.stderr.strip())
    return proc.stdout.strip()


def provenance(settings: Settings, *, now: dt.datetime | None = None) -> dict[str, Any]:
    """The record an evaluation report carries. Retrieval settings are recorded beside it in
    full (``EvalReport.retrieval_settings``); here: what ingestion stored the knowledge base
    with, the embedding engine and the answering settings."""
    from kgrag.eval.kb import ingest_fingerprint

    started = now or dt.datetime.now(dt.UTC)
    llm = settings.llm.model_dump(mode="json", exclude=_SECRET_LLM_FIELDS)
    return {
        "kgrag": kgrag.__version__,
        "commit": code_version(),
        "date": started.isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "settings": {
            "ingest": ingest_fingerprint(settings),
            "embedder_engine": settings.embedder.engine,
            "llm": llm,
        },
    }
