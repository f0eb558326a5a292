"""Entity quality (kgrag/lexicon/entity_rules.py): the parenthesised-alias merge, the noise
filter, and script-aware duplicate suggestions — on their own and on the demo knowledge base."""

from __future__ import annotations

import pytest

from kgrag.aliases.suggest import is_latin_name, suggest_duplicates
from kgrag.lexicon.entity_rules import is_noise_name, parenthesised_alias_keys
from kgrag.stores.sqlite.graph import SqliteGraphStore
from kgrag.text.normalize import normalize_alias
from kgrag.types import Chunk, Document, Entity, Mention

TABLE = {"lowest common ancestor": ["lca-key"], "lca": ["lca-key"], "black book": ["novel"],
         "depth first search": ["dfs-key"]}


def lookup(name: str) -> list[str]:
    return TABLE.get(normalize_alias(name), [])


@pytest.mark.parametrize(("name", "keys"), [
    ("Lowest Common Ancestor (LCA)", ["lca-key"]),  # the alias is the known entity's
    ("Depth First Search (DFS)", ["dfs-key"]),  # the initials of the known name
    ("Black Book (film)", []),  # a disambiguation, not an alias: the film is not the novel
    ("Breadth First Search (BFS)", []),  # no known base name
    ("Lowest Common Ancestor", []),  # no parenthesis
])
def test_parenthesised_alias_keys(name, keys):
    assert parenthesised_alias_keys(name, lookup) == keys


@pytest.mark.parametrize(("surface", "noise"), [
    ("− 2 × depth", True), ("n + 1", True), ("3.5 %", True), ("(1)", True), ("2 × 3", True),
    ("Jean-Luc Picard", False), ("Spider-Man 2", False), ("C++", False), ("C#", False),
    ("Alexander II", False), ("最近公共祖先", False), ("F-16", False),
])
def test_noise_names(surface, noise):
    assert is_noise_name(surface) is noise


def test_demo_lca_is_one_entity_and_formula_fragments_are_none(demo_kb):
    graph = demo_kb.graph
    assert graph.lookup_aliases(["lca"])["lca"] == ["lowest common ancestor"]
    entity = graph.get_entity("lowest common ancestor")
    assert entity is not None and "Lowest Common Ancestor (LCA)" in entity.aliases
    assert graph.get_entity(normalize_alias("Lowest Common Ancestor (LCA)")) is None
    assert not [e.name for e in graph.alias_admin.list_entities() if any(op in e.name for op in "×−")]


def test_suggest_proposes_the_parenthesised_duplicate_and_no_chinese_embedding_pairs(tmp_path, embedder):
    """A knowledge base built before the merge rule holds "Lowest Common Ancestor (LCA)" beside the
    glossary's entity: suggest puts that pair first. Chinese names are never paired by the English
    embedder (惠州/杭州, 哥哥/崇拜 were, at 1.0)."""
    graph = SqliteGraphStore(tmp_path / "graph.sqlite")
    try:
        doc = Document(id="d", source="d", hash="h")
        chunks = [Chunk(id=f"d#{i}", doc_id="d", text="x", ordinal=i) for i in range(2)]
        entities = [Entity("lowest common ancestor", "Lowest Common Ancestor", aliases=["Lowest Common Ancestor", "LCA"]),
                    Entity("lowest common ancestor lca", "Lowest Common Ancestor (LCA)",
                           aliases=["Lowest Common Ancestor (LCA)"])]
        entities += [Entity(n, n) for n in ("惠州", "杭州", "哥哥", "崇拜")]
        mentions = [Mention(e.key, c.id) for e in entities for c in chunks]
        graph.write_document(doc, chunks, entities, mentions, [])
        suggestions = suggest_duplicates(graph, embedder=embedder)
        top = suggestions[0]
        assert (top.keep.key, top.drop.key) == ("lowest common ancestor", "lowest common ancestor lca")
        assert "parenthesised_alias" in top.reasons and "qualifiers_differ" not in top.reasons
        assert not [s for s in suggestions if "embedding" in s.reasons and not is_latin_name(s.keep.name)]
        assert is_latin_name("Café Müller") and not is_latin_name("最近公共祖先")
    finally:
        graph.close()


@pytest.mark.parametrize("title", [
    "1996 Nottingham Open – Singles", "The Twilight Saga: Breaking Dawn – Part 2", "王沈 (太原)",
    "Griqualand West / Griquas 1970", "William Kent(1685 – 1745", "Working Groups > Participating in a Working Group",
])
def test_names_with_dashes_parentheses_and_slashes_between_words_are_kept(title):
    assert not is_noise_name(title)
