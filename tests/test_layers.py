"""Import rules of the house, read from the source: the layers import only downwards, no module
imports a peer of its layer, there is no import cycle; answering and alias administration never
import the ingestion job; entity names live in one layer (``kgrag.lexicon``) that depends only
on ``kgrag.text`` and the core types; Unicode ranges and type constants are written once."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "kgrag"


def _modules(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement in ``path`` names, lazy (function-level) ones included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


def _violations(folders: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(REPO)}:{line} imports {name}"
        for folder in folders
        for path in _modules(folder)
        for line, name in _imports(path)
        if name == forbidden or name.startswith(forbidden)
    ]


def test_answering_loads_neither_the_ingestion_job_nor_spacy():
    # The acceptance check of issue 10 in a fresh interpreter (its message names the offenders).
    check = ("import kgrag.retrieve.pipeline, sys; "
             "assert not any(m.startswith(('kgrag.ingest', 'spacy')) for m in sys.modules), "
             "sorted(m for m in sys.modules if m.startswith(('kgrag.ingest', 'spacy')))")
    done = subprocess.run([sys.executable, "-c", check], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("folder", ["aliases", "retrieve", "generate", "lexicon", "models"])
def test_no_module_of_these_layers_imports_the_ingestion_job(folder):
    assert _modules(folder), f"kgrag/{folder} has no modules: the check would pass vacuously"
    assert _violations((folder,), ("kgrag.ingest",)) == []


def test_the_lexicon_depends_only_on_text_types_and_errors():
    allowed = ("kgrag.lexicon", "kgrag.text", "kgrag.types", "kgrag.errors")
    bad = [
        f"{path.relative_to(REPO)}:{line} imports {name}"
        for path in _modules("lexicon")
        for line, name in _imports(path)
        if name.startswith("kgrag") and not name.startswith(allowed)
    ]
    assert bad == []


# The layers, lowest first. A module may import its own unit (a package, or a top-level module)
# and the units of the layers below; never a layer above, never another unit of its own layer.
# A ``cli`` module of any package (``kgrag.eval.cli``, ``kgrag.aliases.cli``) is a front end: it
# belongs to the top layer with ``kgrag.cli``.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("kgrag", "kgrag.errors", "kgrag.types", "kgrag.heap", "kgrag.atomic_files"),
    ("kgrag.text",),  # scripts, folding, shared patterns, BM25 analysis
    ("kgrag.lexicon", "kgrag.facets"),  # names; document facets
    ("kgrag.config",),  # the settings (the store kinds included)
    ("kgrag.models", "kgrag.stores", "kgrag.client", "kgrag.testing"),  # adapters of outside systems
    ("kgrag.conversations", "kgrag.feedback"),  # the deployment's own small stores
    ("kgrag.retrieve", "kgrag.ingest", "kgrag.transfer"),  # the three jobs on the stores
    ("kgrag.generate",),  # answering from retrieved hits
    ("kgrag.asking", "kgrag.aliases", "kgrag.request_options", "kgrag.reranker"),  # application seams; what a request may ask; training the reranker
    ("kgrag.components",),  # builds everything for one process
    ("kgrag.eval", "kgrag.server", "kgrag.repair"),  # front ends; rebuilding a damaged knowledge base
    ("kgrag.cli",),
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _unit(module: str) -> tuple[int, str]:
    """The layer and unit of a kgrag module (``ValueError`` for one no layer names)."""
    if module.endswith(".cli"):
        return len(LAYERS) - 1, "kgrag.cli"
    for rank, units in enumerate(LAYERS):
        for unit in sorted(units, key=len, reverse=True):
            if module == unit or (unit != "kgrag" and module.startswith(unit + ".")):
                return rank, unit
    raise ValueError(f"{module} is in no layer of LAYERS")


def _layering_violations(paths: list[Path]) -> list[str]:
    out = []
    for path in paths:
        source = _module_name(path)
        rank, unit = _unit(source)
        for line, name in _imports(path):
            if not name.startswith("kgrag"):
                continue
            target_rank, target_unit = _unit(name)
            if target_unit == unit or source.startswith(name + "."):  # its own unit, or its package
                continue
            if target_rank > rank:
                out.append(f"{path.relative_to(REPO)}:{line} imports {name}: layer {target_rank} above {rank}")
            elif target_rank == rank:
                out.append(f"{path.relative_to(REPO)}:{line} imports {name}: a peer of its layer ({target_unit})")
    return out


def test_every_module_imports_only_downwards():
    paths = sorted(PACKAGE.rglob("*.py"))
    assert len(paths) > 150
    assert _layering_violations(paths) == []


def test_the_layering_check_fails_on_a_planted_upward_import(tmp_path, monkeypatch):
    """Planted in a copy of real modules: retrieval importing answering, ingestion importing
    the asking seam, the settings importing a store, a store importing a peer adapter."""
    planted = {
        "kgrag/retrieve/planted.py": "def f():\n    from kgrag.generate.generator import Generator\n",
        "kgrag/ingest/planted.py": "from kgrag.asking import Asking\n",
        "kgrag/config_planted.py": "from kgrag.stores.factory import build_graph_store\n",
        "kgrag/stores/planted.py": "from kgrag.models.base import Embedder\n",
    }
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    paths = []
    for rel, text in planted.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        paths.append(path)
    found = _layering_violations(paths[:2] + paths[3:])
    assert [v.split(":")[0] for v in found] == ["kgrag/retrieve/planted.py", "kgrag/ingest/planted.py",
                                                "kgrag/stores/planted.py"]
    assert "above" in found[0] and "above" in found[1] and "a peer" in found[2]
    with pytest.raises(ValueError, match="in no layer"):  # a new top-level module must be placed
        _layering_violations([paths[2]])


def test_no_import_cycle_among_modules():
    """Module-level, function-level and type-checking imports alike: no module reaches itself."""
    import networkx as nx

    graph = nx.DiGraph()
    names = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    for name, path in names.items():
        for _, imported in _imports(path):
            target = imported
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                graph.add_edge(name, target)
    assert [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1] == []


def test_the_rule_checker_sees_lazy_imports(tmp_path):
    """The checks above would prove nothing if a function-level import slipped past them."""
    module = tmp_path / "lazy.py"
    module.write_text("def f():\n    from kgrag.ingest.extract import Extractor\n    import spacy\n")
    assert _imports(module) == [(2, "kgrag.ingest.extract"), (3, "spacy")]


# A character-class range such as \u4e00-\u9fff, escaped or written literally.
_CJK_CHAR = r"(?:\\u[0-9a-fA-F]{4}|[\u3000-\ud7ff\uf900-\uffef])"
_UNICODE_RANGE = re.compile(rf"{_CJK_CHAR}-{_CJK_CHAR}|\"\\u[0-9a-fA-F]{{4}}\"\s*<=")


def test_unicode_ranges_are_written_only_in_text_scripts():
    scripts = PACKAGE / "text" / "scripts.py"
    assert _UNICODE_RANGE.search(scripts.read_text(encoding="utf-8"))  # the pattern finds ranges
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != scripts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if _UNICODE_RANGE.search(line)
    ]
    assert found == []


# Type names kgrag assigns itself; kgrag.types defines each once. The SQLite graph writer's
# UNDIRECTED_RELATION_TYPES still spells "CO_OCCURS": kgrag/stores is being split into
# per-engine packages in parallel, and that rule moves with it (then it imports the constant).
_TYPE_CONSTANTS = {"CONCEPT", "TITLE", "CO_OCCURS"}
_PENDING = ("UNDIRECTED_RELATION_TYPES", "CO_OCCURS")


def _pending(tree: ast.AST) -> set[int]:
    """Ids of the constant nodes the pending exception allows."""
    name, value = _PENDING
    return {
        id(constant)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        for constant in ast.walk(node.value)
        if isinstance(constant, ast.Constant) and constant.value == value
    }


def test_entity_and_relation_type_names_are_defined_once_in_types():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "types.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _pending(tree) | {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}  # + docstrings
        found += [
            f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in _TYPE_CONSTANTS and id(node) not in skip
        ]
    assert found == []
    from kgrag import types

    assert (types.CONCEPT, types.TITLE, types.CO_OCCURS) == ("CONCEPT", "TITLE", "CO_OCCURS")
    assert types.Entity("k", "n").type == types.CONCEPT and types.Relation("a", "b", "c").type == types.CO_OCCURS
