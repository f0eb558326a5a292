"""The layout of the stores house, checked on the source (no store is opened):

- one package per engine under ``kgrag/stores/`` (sqlite, neo4j, elasticsearch), none of which
  imports another engine's package; the engine-free modules beside them import no engine;
- no import cycle anywhere in kgrag;
- test launchers live in ``kgrag/testing`` and nothing else in kgrag imports them;
- the store kinds are named once (``kgrag.stores.factory``) and settings, transfer and the
  builders agree on them.

Imports are read from the syntax tree: module-level and function-level ones alike (a lazy
import still runs), except those under ``if TYPE_CHECKING:`` (never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "kgrag"
STORES = PACKAGE / "stores"
ENGINES = ("sqlite", "neo4j", "elasticsearch")
# Client libraries of the engines: an engine-free module imports none of them.
ENGINE_LIBRARIES = {"sqlite": "sqlite3", "neo4j": "neo4j", "elasticsearch": "elasticsearch"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def imported_names(path: Path, name: str | None = None) -> list[str]:
    """Every module name ``path`` (module ``name``) imports when it runs (``from a import b``
    gives ``a.b`` when that is a kgrag module, else ``a``); relative imports resolved."""
    name = name or _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking_only(child):
                for other in child.orelse:  # type: ignore[attr-defined]
                    visit_node(other)
                continue
            visit_node(child)

    def visit_node(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.append(full if full in MODULES else base)
        visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _kgrag_module(name: str) -> str | None:
    """The kgrag module an imported name runs (the longest existing prefix), None outside kgrag."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for name, path in MODULES.items():
        graph.add_node(name)
        for imported in imported_names(path):
            target = _kgrag_module(imported)
            if target is not None and target != name:
                graph.add_edge(name, target)
    return graph


def _engine_of(name: str) -> str | None:
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["kgrag", "stores"] and parts[2] in ENGINES else None


# -- the checker itself -------------------------------------------------------------------------
def test_the_import_reader_sees_lazy_imports_and_skips_type_checking_ones(tmp_path):
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "import kgrag.types\n"
        "from kgrag.stores import base\n"
        "if TYPE_CHECKING:\n    from kgrag.config import Settings\n"
        "def f():\n    from kgrag.stores.neo4j.graph import Neo4jGraphStore\n"
    )
    names = imported_names(source, "kgrag.probe")
    assert "kgrag.stores.neo4j.graph" in names and "kgrag.stores.base" in names and "kgrag.types" in names
    assert "kgrag.config" not in names


def test_the_cycle_finder_finds_the_cycle_main_had():
    """What this suite would have said of the flat layout: sqlite_graph ⇄ sqlite_aliases."""
    graph = nx.DiGraph([("kgrag.stores.sqlite_graph", "kgrag.stores.sqlite_aliases"),
                        ("kgrag.stores.sqlite_aliases", "kgrag.stores.sqlite_graph")])
    assert _cycles(graph) == [["kgrag.stores.sqlite_aliases", "kgrag.stores.sqlite_graph"]]


def _cycles(graph: nx.DiGraph) -> list[list[str]]:
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)


# -- the layout ----------------------------------------------------------------------------------
def test_each_engine_has_its_package():
    for engine in ENGINES:
        assert (STORES / engine / "__init__.py").is_file(), engine
    flat = {p.name for p in STORES.glob("*.py")}
    engine_free = {"__init__.py", "base.py", "consistency.py", "factory.py", "graph_rules.py", "graph_walk.py",
                   "merge_split.py"}
    assert engine_free <= flat and flat - engine_free <= {"filters.py"}  # filters: the typed search filters


@pytest.mark.parametrize("engine", ENGINES)
def test_no_engine_package_imports_another_engine(engine):
    offenders = []
    for name, path in MODULES.items():
        if _engine_of(name) != engine:
            continue
        for imported in imported_names(path):
            other = _engine_of(_kgrag_module(imported) or "")
            library = imported.split(".")[0]
            if (other not in (None, engine)) or any(
                    library == lib for e, lib in ENGINE_LIBRARIES.items() if e != engine):
                offenders.append(f"{name} imports {imported}")
    assert offenders == []


def test_engine_free_store_modules_import_no_engine():
    """base, graph_rules, graph_walk, merge_split (and filters): rules for every engine. The
    factory is the one module that names the adapters, and imports each only to build it."""
    offenders = []
    for path in sorted(STORES.glob("*.py")):
        name = _module_name(path)
        if name == "kgrag.stores.factory":
            continue
        for imported in imported_names(path):
            if _engine_of(_kgrag_module(imported) or "") or imported.split(".")[0] in ENGINE_LIBRARIES.values():
                offenders.append(f"{name} imports {imported}")
    assert offenders == []


def test_no_import_cycle_in_kgrag():
    assert _cycles(import_graph()) == []


def test_test_launchers_are_outside_the_runtime():
    """kgrag/testing holds servers for tests and benchmarks; nothing else in kgrag imports it."""
    graph = import_graph()
    for launcher in ("kgrag.testing.arcadedb", "kgrag.testing.neo4j"):
        importers = sorted(n for n in graph.predecessors(launcher) if not n.startswith("kgrag.testing"))
        assert importers == [], launcher
    for path in STORES.rglob("*.py"):
        assert "subprocess" not in imported_names(path), path  # no store starts a server


# -- the store kinds -----------------------------------------------------------------------------
def test_store_kinds_are_named_once_and_agree_everywhere(tmp_path):
    from kgrag import config
    from kgrag.config import Settings
    from kgrag.errors import ConfigError
    from kgrag.stores import factory
    from kgrag.transfer.plan import KINDS, parse_kinds

    assert Settings.model_fields["chunk_store"].annotation is config.ChunkStoreKind
    assert Settings.model_fields["graph_store"].annotation is config.GraphStoreKind
    assert config.CHUNK_STORE_KINDS == ("sqlite", "elasticsearch")
    assert config.GRAPH_STORE_KINDS == ("sqlite", "neo4j")
    assert KINDS == sorted(set(config.CHUNK_STORE_KINDS) | set(config.GRAPH_STORE_KINDS))
    for kind in config.GRAPH_STORE_KINDS:
        assert parse_kinds(kind)[0] == kind
    for kind in config.CHUNK_STORE_KINDS:
        assert parse_kinds(kind)[1] == kind
    with pytest.raises(ValueError, match="chunk_store"):
        Settings(data_dir=tmp_path, chunk_store="neo4j")
    bogus = Settings(data_dir=tmp_path).model_copy(update={"graph_store": "bogus"})
    with pytest.raises(ConfigError, match="supported: sqlite, neo4j"):
        factory.build_graph_store(bogus)


# -- roles -----------------------------------------------------------------------------------------
def test_each_store_class_answers_every_role_and_graph_store_is_no_wider_than_its_use():
    """Checked on the classes, so it holds without a server (the contract suites check behaviour).
    ``GraphStore`` promises what retrieval, ingestion and transfer call; the alias-admin and
    audit methods live on the store's role objects (``store.alias_admin``, ``store.audit``)."""
    from kgrag.stores import base
    from kgrag.stores.neo4j.aliases import Neo4jAliasAdmin, Neo4jAuditLog
    from kgrag.stores.neo4j.graph import Neo4jGraphStore
    from kgrag.stores.sqlite.aliases import SqliteAliasAdmin, SqliteAuditLog
    from kgrag.stores.sqlite.graph import SqliteGraphStore

    def methods(protocol: type) -> set[str]:
        return {n for n in dir(protocol) if not n.startswith("_") and callable(getattr(protocol, n))}

    roles = [base.GraphReader, base.GraphWriter, base.GraphExport]
    assert methods(base.GraphStore) == set().union(*map(methods, roles)) | {"close"}
    assert len(methods(base.GraphStore)) == 22  # + document_hashes, document_chunk_ids (consistency), prepare_reads, relation_evidence (the explorer)
    assert not methods(base.GraphStore) & (methods(base.AliasAdmin) | methods(base.AuditLog))
    assert {"alias_admin", "audit"} <= set(dir(base.GraphStore)) and {"alias_admin", "audit"} <= set(dir(base.AliasGraph))
    for store in (SqliteGraphStore, Neo4jGraphStore):
        assert methods(base.GraphStore) <= methods(store), store
    for admin in (SqliteAliasAdmin, Neo4jAliasAdmin):
        assert methods(base.AliasAdmin) <= methods(admin), admin
    for audit in (SqliteAuditLog, Neo4jAuditLog):
        assert methods(base.AuditLog) <= methods(audit), audit
