"""Curated (glossary) aliases match in any case; names learned from text keep the case guard;
English stop words match only in capitals, curated or not."""

from __future__ import annotations

from kgrag.lexicon.gazetteer import Gazetteer
from kgrag.lexicon.glossary import glossary_aliases
from kgrag.stores.sqlite.graph import SqliteGraphStore
from kgrag.types import Entity


def surfaces(g: Gazetteer, text: str) -> list[str]:
    return [m.surface for m in g.match(text)]


def test_curated_one_word_alias_matches_in_lower_case():
    g = Gazetteer({"heap": ["heap"], "bill": ["bill person"]}, any_case=["Heap"])
    assert surfaces(g, "Push onto the heap. Heap order holds.") == ["heap", "Heap"]
    # Learned from text (not curated): lower case is an ordinary word.
    assert surfaces(g, "Pay the bill, Bill said.") == ["Bill"]


def test_curated_stop_word_still_needs_capitals():
    g = Gazetteer({"it": ["information technology"]}, any_case=["IT"])
    assert surfaces(g, "It said it would ask IT.") == ["IT"]


def test_curated_entities_from_the_graph_feed_any_case(tmp_path):
    """The wiring proposed for ``Components.build_extractor``: the graph's curated entities
    (glossary entries) become the gazetteer's any-case aliases; other entities do not."""
    graph = SqliteGraphStore(tmp_path / "graph.sqlite")
    try:
        graph.upsert_entities(
            [
                Entity(key="heap", name="heap", type="CONCEPT", aliases=["binary heap"], curated=True),
                Entity(key="lca", name="LCA", type="CONCEPT", aliases=["lowest common ancestor"], curated=True),
                Entity(key="rust", name="Rust", type="PRODUCT", aliases=[]),  # learned by NER
            ]
        )
        g = Gazetteer(graph.alias_table(), any_case=glossary_aliases(graph.curated_entities()))
    finally:
        graph.close()
    text = "use a heap to find the lca, then let the rust settle. Rust is a language."
    assert surfaces(g, text) == ["heap", "lca", "Rust"]
