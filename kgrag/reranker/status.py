"""One line on the reranker a knowledge base answers with (``kgrag stats``, ``/readyz``): the
configured one, and the trained one in the data dir, read from their manifests without loading
a model."""

from __future__ import annotations

import json
from pathlib import Path

from kgrag.config import Settings

MODEL_DIR_NAME = "reranker"


def trained_model_dir(data_dir: Path) -> Path:
    """Where ``kgrag reranker train`` installs the knowledge base's reranker."""
    return Path(data_dir) / MODEL_DIR_NAME


def trained_manifest(folder: Path) -> dict | None:
    try:
        return json.loads((folder / "reranker.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def describe(folder: Path, manifest: dict) -> str:
    examples = sum((manifest.get("examples") or {}).values())
    return f"{folder} (trained {manifest.get('created', '?')} on {examples} queries, {manifest.get('language', '?')})"


def reranker_status(settings: Settings) -> str:
    configured = settings.retrieval.reranker_path
    trained = trained_model_dir(settings.data_dir)
    manifest = trained_manifest(trained)
    if configured:
        path = Path(configured).expanduser()
        own = trained_manifest(path)
        shown = describe(path, own) if own else str(path)
        return shown if path.exists() else f"{path} (configured, but missing: queries keep the fused order)"
    if manifest is not None:
        return f"none in use; trained: {describe(trained, manifest)} (set retrieval.reranker_path to use it)"
    return "none (fused order; `kgrag reranker train` fits one)"
