"""One error root: every exception class kgrag defines is a KgragError under the category its
callers map to an HTTP status or exit code (kgrag.errors). Found from the source, so a new
class that forgets its category fails here."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from kgrag.errors import ConfigError, InputError, KgragError, ModelError, StoreError

PACKAGE = Path(__file__).resolve().parents[1] / "kgrag"

# The category each deliberate error belongs to (what the HTTP layer and the CLI key on).
EXPECTED = {
    "kgrag.server.errors.ApiError": InputError,  # every ApiError raised is a 4xx
    "kgrag.retrieve.pipeline.RetrievalError": InputError,
    "kgrag.ingest.loaders.base.LoadError": InputError,
    "kgrag.eval.runner.EvalConfigError": InputError,
    "kgrag.eval.data.EvalDataError": InputError,
    "kgrag.eval.compare.CompareError": InputError,
    "kgrag.eval.kb.KnowledgeBaseError": StoreError,
    "kgrag.errors.StoreConflict": StoreError,
    "kgrag.errors.StoreDamaged": StoreError,
    "kgrag.ingest.job.PartialWrite": StoreError,
    "kgrag.models.llm.LLMError": ModelError,
    "kgrag.retrieve.followup_llm.RewriteRejected": ModelError,
    "kgrag.aliases.service.AliasError": InputError,
    "kgrag.transfer.TransferError": InputError,
    "kgrag.lexicon.glossary.GlossaryError": InputError,
    "kgrag.models.embedder.EmbedderError": ModelError,
    "kgrag.models.reranker.RerankerError": ModelError,
    "kgrag.models.ner.NerError": ModelError,
}
CATEGORIES = (InputError, StoreError, ConfigError, ModelError)


def _exception_classes() -> list[str]:
    """``module.Class`` for every class in kgrag whose name or bases say it is an exception."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [ast.unparse(b) for b in node.bases]
            if node.name.endswith(("Error", "Unavailable")) or any(b.endswith(("Error", "Exception")) for b in bases):
                found.append(f"{module}.{node.name}")
    return found


def _load(qualified: str) -> type:
    module, name = qualified.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def test_every_error_class_has_one_category():
    classes = _exception_classes()
    assert "kgrag.server.errors.ApiError" in classes and "kgrag.ingest.loaders.base.LoadError" in classes
    rootless = []
    for qualified in classes:
        cls = _load(qualified)
        if cls is KgragError or cls in CATEGORIES:
            continue
        if not issubclass(cls, KgragError) or not any(issubclass(cls, c) for c in CATEGORIES):
            rootless.append(f"{qualified} ({', '.join(b.__name__ for b in cls.__mro__[1:])})")
    assert not rootless, "error classes outside kgrag.errors' categories: " + "; ".join(rootless)


@pytest.mark.parametrize("qualified", sorted(EXPECTED))
def test_error_category(qualified):
    assert issubclass(_load(qualified), EXPECTED[qualified])


def test_value_error_compatibility_kept():
    """Callers that caught these as ValueError (or RuntimeError) still do."""
    assert all(issubclass(_load(q), ValueError) for q, c in EXPECTED.items() if c is InputError)
    assert issubclass(_load("kgrag.eval.kb.KnowledgeBaseError"), RuntimeError)
