"""``kgrag aliases`` through click's CliRunner (the real command, real stores) on a knowledge base
built by the ``components`` fixture, and the ``scripts/aliases`` wrapper as a subprocess."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

import pytest
from click.testing import CliRunner

from kgrag.cli import main
from tests.conftest import REPO
from tests.test_aliases import QUESTION, doc_of, graph_state, ingest_seed


@pytest.fixture
def kb(components, tmp_path):
    ingest_seed(components, tmp_path)
    return components


def run(kb, *args: str, user: str = "ana"):
    result = CliRunner().invoke(main, ["--data-dir", str(kb.settings.data_dir), "aliases", "--user", user, *args])
    return result.exit_code, result.output


def test_add_from_the_cli_reaches_retrieval_at_once(kb):
    before = kb.retriever.retrieve(QUESTION, modes=("graph",))
    assert not doc_of(before.hits, "zh.md")
    code, out = run(kb, "add", "LCA", "最近公共祖先", "Lowest Common Ancestor")
    assert code == 0, out
    assert "created curated entity 'lca'" in out and "linked 2 chunk(s)" in out
    after = kb.retriever.retrieve(QUESTION, modes=("graph",))
    assert [le.key for le in after.query.linked] == ["lca"] and doc_of(after.hits, "zh.md")
    code, out = run(kb, "add", "LCA", "最近公共祖先")
    assert code == 0 and out.startswith("unchanged:")


def test_list_show_audit_and_ambiguous(kb):
    assert run(kb, "add", "LCA", "最近公共祖先", "Lowest Common Ancestor")[0] == 0
    assert run(kb, "add", "Tree algorithms", "算法", user="bo")[0] == 0
    assert run(kb, "add", "树的算法", "Tree algorithms", "--force", user="bo")[0] == 0
    code, out = run(kb, "list", "--json")
    listed = {e["key"]: e for e in json.loads(out)["entities"]}
    assert listed["lca"]["aliases"] == ["最近公共祖先", "Lowest Common Ancestor"] and listed["lca"]["chunks"] == 2
    code, out = run(kb, "list", "--ambiguous")
    assert code == 0 and "'tree algorithms' → tree algorithms" in out and "树的算法" in out
    code, out = run(kb, "show", "最近公共祖先")
    assert code == 0 and out.startswith("LCA [lca] CONCEPT curated") and "in 2 chunks" in out
    code, out = run(kb, "audit", "--json")
    entries = json.loads(out)["entries"]
    assert [(e["who"], e["action"], e["target"]) for e in entries] == [
        ("bo", "add", "树的算法"), ("bo", "add", "tree algorithms"), ("ana", "add", "lca")]


def test_refused_input_exits_2_and_changes_nothing(kb):
    state = graph_state(kb.graph)
    for args, message in [
        (("remove", "Nope", "x"), "no entity named 'Nope'"),
        (("add", "LCA", "  "), "alias is empty"),
        (("merge", "Tree algorithms", "Nope"), "no entity named 'Nope'"),
        (("split", "Tree algorithms", "x", "--into", "Y"), "not alias"),
    ]:
        code, out = run(kb, *args)
        assert code == 2 and "error: " in out and message in out, (args, out)
    assert run(kb, "add", "Tree algorithms", "算法")[0] == 0
    state = graph_state(kb.graph)
    code, out = run(kb, "add", "LCA", "Tree algorithms")
    assert code == 2 and "canonical name of curated entity 'tree algorithms'" in out and "--force" in out
    assert graph_state(kb.graph) == state


def test_merge_split_and_export_import(kb, tmp_path):
    assert run(kb, "add", "LCA", "最近公共祖先")[0] == 0
    before = graph_state(kb.graph)
    code, out = run(kb, "merge", "LCA", "Lowest Common Ancestor")
    assert code == 0 and "merged ['lowest common ancestor'] into 'lca'" in out
    code, out = run(kb, "split", "LCA", "Lowest Common Ancestor", "--into", "Lowest Common Ancestor")
    assert code == 0, out
    after = graph_state(kb.graph)
    assert (after["mentions"], after["stats"]) == (before["mentions"], before["stats"])
    path = tmp_path / "glossary.csv"
    code, out = run(kb, "export", str(path))
    assert code == 0 and "wrote 2 entities" in out
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[:2] == ["canonical,type,aliases", "LCA,CONCEPT,最近公共祖先"]
    assert len(lines) == 3 and lines[2].startswith("Lowest Common Ancestor,")  # curated by the split
    code, out = run(kb, "import", str(path))
    assert code == 0 and out.splitlines()[-1].startswith("unchanged:")  # after the progress lines (stderr)


def test_suggest_prints_merge_commands_without_changing_anything(kb):
    assert run(kb, "add", "LCA", "最近公共祖先")[0] == 0
    state = graph_state(kb.graph)
    code, out = run(kb, "suggest", "--no-embeddings", "--json")
    assert code == 0
    pairs = {frozenset((s["keep"]["key"], s["drop"]["key"])): s for s in json.loads(out)["suggestions"]}
    lca = pairs[frozenset(("lca", "lowest common ancestor"))]
    assert lca["reasons"]["acronym"] == "lca" and lca["command"].startswith("kgrag aliases merge ")
    assert graph_state(kb.graph) == state


def test_scripts_aliases_wrapper(kb):
    stamp = REPO / ".venv" / ".kgrag-setup"
    want = hashlib.sha256((REPO / "pyproject.toml").read_bytes() + (REPO / "scripts" / "setup").read_bytes()).hexdigest()
    if not stamp.exists() or stamp.read_text().split()[-1:] != [want]:
        pytest.skip("the .venv setup stamp is stale: the wrapper would reinstall dependencies (scripts/test runs setup first)")
    env = {**os.environ, "KGRAG_DATA_DIR": str(kb.settings.data_dir), "USER": "carla"}
    done = subprocess.run([str(REPO / "scripts" / "aliases"), "add", "LCA", "最近公共祖先"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "created curated entity 'lca'" in done.stdout
    assert kb.graph.audit.audit_log()[0].who == "carla"
    done = subprocess.run([str(REPO / "scripts" / "aliases"), "show", "nope"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2 and "no entity named 'nope'" in done.stderr
