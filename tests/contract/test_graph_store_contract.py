"""GraphStore contract: every implementation must pass these, through the protocol only."""

from __future__ import annotations

import pytest

from kgrag.stores.base import GraphStore, StoreError
from kgrag.text.normalize import normalize_alias
from kgrag.types import Chunk, Document, Entity, GraphPath, Mention, Relation

CO = "CO_OCCURS"


def _doc(doc_id: str, n_chunks: int, hash_: str = "h1", **meta) -> tuple[Document, list[Chunk]]:
    doc = Document(id=doc_id, source=f"{doc_id}.md", title=f"Title of {doc_id}", hash=hash_,
                   format="md", metadata=meta)
    chunks = [Chunk(id=f"{doc_id}#{i}", doc_id=doc_id, text=f"chunk {i} of {doc_id}",
                    section_path=f"S{i}", ordinal=i) for i in range(n_chunks)]
    return doc, chunks


LCA = Entity(key="lca", name="LCA", type="CONCEPT", aliases=["Lowest Common Ancestor", "最近公共祖先"])
TREE = Entity(key="tree", name="Tree", type="CONCEPT", aliases=["trees"])
DFS = Entity(key="dfs", name="DFS", type="ALGORITHM", aliases=["Depth-First Search"])
BFS = Entity(key="bfs", name="BFS", type="ALGORITHM")


def _write_a(store: GraphStore, hash_: str = "h1") -> None:
    """Document A: LCA–Tree evidenced twice (weights 1 and 2, once reversed), DFS–Tree once."""
    doc, chunks = _doc("A", 2, hash_, lang="en")
    store.write_document(
        doc, chunks, [LCA, TREE, DFS],
        [Mention("lca", "A#0", 2), Mention("tree", "A#0"), Mention("tree", "A#1"), Mention("dfs", "A#1")],
        [Relation("lca", "tree", "A#0", CO, 1.0), Relation("tree", "lca", "A#1", CO, 2.0),
         Relation("dfs", "tree", "A#1", CO, 1.0)],
    )


def _write_b(store: GraphStore) -> None:
    """Document B: Tree (with a new alias), LCA and BFS; LCA–Tree weight 0.5, Tree–BFS 1."""
    doc, chunks = _doc("B", 1)
    tree_more = Entity(key="tree", name="Tree", aliases=["树", "TREES", "Ｔｒｅｅ"])
    store.write_document(
        doc, chunks, [tree_more, LCA, BFS],
        [Mention("tree", "B#0"), Mention("lca", "B#0"), Mention("bfs", "B#0", 3)],
        [Relation("tree", "lca", "B#0", CO, 0.5), Relation("bfs", "tree", "B#0", CO, 1.0)],
    )


@pytest.fixture
def two_docs(graph_store: GraphStore) -> GraphStore:
    _write_a(graph_store)
    _write_b(graph_store)
    return graph_store


def test_is_a_graph_store(graph_store):
    assert isinstance(graph_store, GraphStore)


def test_write_document_then_stats(graph_store):
    _write_a(graph_store)
    # aliases: LCA 3 (name + 2), Tree 2 (name, "trees"), DFS 2 (name, "depth first search")
    assert graph_store.stats() == {"documents": 1, "chunks": 2, "entities": 3, "aliases": 7,
                                   "mentions": 4, "relations": 2}
    doc = graph_store.get_document("A")
    assert (doc.id, doc.source, doc.title, doc.hash, doc.format, doc.metadata) == (
        "A", "A.md", "Title of A", "h1", "md", {"lang": "en"})
    assert graph_store.get_document("nope") is None


def test_list_documents(two_docs):
    assert sorted(d.id for d in two_docs.list_documents()) == ["A", "B"]
    assert {d.id: d.hash for d in two_docs.list_documents()} == {"A": "h1", "B": "h1"}


def test_entity_merge_adds_aliases_without_normalized_duplicates(two_docs):
    tree = two_docs.get_entity("tree")
    # "TREES" and "Ｔｒｅｅ" normalize to forms Tree already has: only "树" is new.
    assert tree.name == "Tree" and tree.type == "CONCEPT"
    assert sorted(tree.aliases) == sorted(["Tree", "trees", "树"])
    assert two_docs.stats()["aliases"] == 9
    two_docs.upsert_entities([Entity(key="tree", name="Renamed", type="OTHER", aliases=["T.R.E.E.", "arbre"])])
    tree = two_docs.get_entity("tree")
    assert (tree.name, tree.type) == ("Tree", "CONCEPT")  # an existing entity keeps name and type
    # ...and the other name it was given becomes one more alias.
    assert sorted(tree.aliases) == sorted(["Tree", "trees", "树", "Renamed", "arbre"])
    assert two_docs.lookup_aliases(["arbre", "tree", "trees"]) == {
        "arbre": ["tree"], "tree": ["tree"], "trees": ["tree"]}


def test_an_entity_given_twice_in_one_call_keeps_both_alias_lists(graph_store):
    graph_store.upsert_entities([Entity(key="lca", name="LCA", aliases=["Lowest Common Ancestor"]),
                                 Entity(key="lca", name="L.C.A.", type="OTHER", aliases=["最近公共祖先"], curated=True)])
    lca = graph_store.get_entity("lca")
    assert (lca.name, lca.type, lca.curated) == ("LCA", "CONCEPT", True)
    assert sorted(lca.aliases) == sorted(["LCA", "Lowest Common Ancestor", "最近公共祖先"])


def test_alias_table_lists_every_entity_claiming_an_alias(graph_store):
    graph_store.upsert_entities([
        Entity(key="apple fruit", name="Apple (fruit)", aliases=["Apple", "pomme"]),
        Entity(key="apple inc", name="Apple Inc.", type="ORG", aliases=["APPLE", "AAPL"]),
    ])
    table = graph_store.alias_table()
    assert sorted(table["apple"]) == ["apple fruit", "apple inc"]
    assert table["pomme"] == ["apple fruit"] and table["aapl"] == ["apple inc"]
    assert table[normalize_alias("Apple Inc.")] == ["apple inc"]  # the entity's own name is an alias
    looked_up = graph_store.lookup_aliases(["apple", "aapl", "missing"])
    assert {k: sorted(v) for k, v in looked_up.items()} == {
        "apple": ["apple fruit", "apple inc"], "aapl": ["apple inc"]}


def test_alias_table_of_types_keeps_only_those_entities_claims(two_docs):
    """The described entities' index reads only the term extractor's entities."""
    assert two_docs.alias_table(types=["ALGORITHM"]) == {
        "bfs": ["bfs"], "dfs": ["dfs"], "depth first search": ["dfs"]}
    concepts = two_docs.alias_table(types=["CONCEPT", "NO_SUCH_TYPE"])
    assert "dfs" not in concepts and concepts["lowest common ancestor"] == ["lca"]
    assert concepts["树"] == ["tree"] and concepts == {
        alias: keys for alias, keys in two_docs.alias_table().items() if set(keys) <= {"lca", "tree"}}
    assert two_docs.alias_table(types=[]) == {}


def test_relation_weights_accumulate_across_chunks_and_directions(two_docs):
    assert two_docs.relation_weight("lca", "tree") == pytest.approx(3.5)
    assert two_docs.relation_weight("tree", "lca") == pytest.approx(3.5)
    assert two_docs.relation_weight("dfs", "tree") == pytest.approx(1.0)
    assert two_docs.relation_weight("dfs", "bfs") == 0
    assert two_docs.stats()["relations"] == 3


def test_relation_evidence_lists_each_evidencing_chunk_heaviest_first(two_docs):
    assert two_docs.relation_evidence("lca", "tree") == [(CO, "A#1", 2.0), (CO, "A#0", 1.0), (CO, "B#0", 0.5)]
    assert two_docs.relation_evidence("tree", "lca", limit=1) == [(CO, "A#1", 2.0)]
    assert two_docs.relation_evidence("dfs", "bfs") == []


def test_mentions_and_chunk_entities(two_docs):
    assert two_docs.mentions_of(["lca", "bfs"]) == {"lca": [("A#0", 2), ("B#0", 1)], "bfs": [("B#0", 3)]}
    assert two_docs.entity_chunk_counts(["tree", "lca", "dfs"]) == {"tree": 3, "lca": 2, "dfs": 1}
    got = two_docs.chunk_entities(["A#0", "B#0", "missing"])
    assert set(got) == {"A#0", "B#0"}
    assert sorted(got["A#0"]) == ["lca", "tree"] and sorted(got["B#0"]) == ["bfs", "lca", "tree"]


def test_delete_document_removes_only_what_it_evidenced(two_docs):
    assert two_docs.delete_document("A") is True
    assert two_docs.delete_document("A") is False
    assert two_docs.get_document("A") is None and two_docs.get_document("B") is not None
    assert two_docs.get_entity("dfs") is None  # mentioned only by A
    assert "depth first search" not in two_docs.alias_table()
    assert two_docs.get_entity("lca") is not None and two_docs.get_entity("tree") is not None
    assert two_docs.relation_weight("lca", "tree") == pytest.approx(0.5)  # B's evidence stays
    assert two_docs.relation_weight("dfs", "tree") == 0
    assert two_docs.mentions_of(["lca", "tree", "dfs"]) == {"lca": [("B#0", 1)], "tree": [("B#0", 1)]}
    assert two_docs.chunk_entities(["A#0", "A#1"]) == {}
    assert two_docs.stats() == {"documents": 1, "chunks": 1, "entities": 3, "aliases": 9 - 2,
                                "mentions": 3, "relations": 2}


def test_delete_unknown_document_is_false(graph_store):
    assert graph_store.delete_document("never-written") is False


def test_curated_entity_survives_without_mentions(graph_store):
    graph_store.upsert_entities([Entity(key="lca", name="LCA", aliases=["最近公共祖先"], curated=True)])
    _write_a(graph_store)
    graph_store.upsert_entities([Entity(key="lca", name="LCA", curated=False)])  # curated sticks
    graph_store.delete_document("A")
    lca = graph_store.get_entity("lca")
    assert lca is not None and lca.curated is True
    assert sorted(lca.aliases) == sorted(["LCA", "最近公共祖先", "Lowest Common Ancestor"])
    assert graph_store.get_entity("tree") is None
    assert graph_store.mentions_of(["lca"]) == {}


def test_rewriting_a_document_replaces_it(graph_store):
    _write_a(graph_store)
    first = graph_store.stats()
    _write_a(graph_store, hash_="h2")
    assert graph_store.stats() == first
    assert graph_store.relation_weight("lca", "tree") == pytest.approx(3.0)  # not doubled
    assert graph_store.mentions_of(["lca"]) == {"lca": [("A#0", 2)]}
    assert graph_store.get_document("A").hash == "h2"
    # New content with other chunks: the old chunks, mentions and orphans go.
    doc, chunks = _doc("A", 1, "h3")
    graph_store.write_document(doc, chunks, [BFS], [Mention("bfs", "A#0")], [])
    assert graph_store.stats() == {"documents": 1, "chunks": 1, "entities": 1, "aliases": 1,
                                   "mentions": 1, "relations": 0}
    assert graph_store.get_entity("lca") is None


def _chain(store: GraphStore) -> None:
    """a–b (1), b–c (1), a–d (2), d–e (1), b–e (1), c –PART_OF→ f (1); g isolated but mentioned."""
    keys = "abcdefg"
    doc, chunks = _doc("chain", 1)
    cid = chunks[0].id
    store.write_document(
        doc, chunks, [Entity(key=k, name=k.upper()) for k in keys], [Mention(k, cid) for k in keys],
        [Relation("a", "b", cid, CO, 1), Relation("c", "b", cid, CO, 1), Relation("a", "d", cid, CO, 2),
         Relation("e", "d", cid, CO, 1), Relation("b", "e", cid, CO, 1), Relation("c", "f", cid, "PART_OF", 1)],
    )


def test_neighbors_one_hop(graph_store):
    """Paths carry each edge's type and summed weight (the graph path scores by both)."""
    _chain(graph_store)
    assert graph_store.neighbors(["a"], 1) == {
        "a": GraphPath(["a"], []), "b": GraphPath(["a", "b"], [CO], [1.0]), "d": GraphPath(["a", "d"], [CO], [2.0])}
    assert graph_store.neighbors(["a"], 0) == {"a": GraphPath(["a"], [])}
    assert graph_store.neighbors(["g"], 2) == {"g": GraphPath(["g"], [])}
    assert graph_store.neighbors(["unknown-key"], 2) == {}


def test_neighbors_two_hops_take_the_heaviest_shortest_path(graph_store):
    _chain(graph_store)
    got = graph_store.neighbors(["a"], 2)
    assert set(got) == {"a", "b", "c", "d", "e"}
    assert got["c"] == GraphPath(["a", "b", "c"], [CO, CO], [1.0, 1.0])
    assert got["e"] == GraphPath(["a", "d", "e"], [CO, CO], [2.0, 1.0])  # via d: 2 + 1 beats via b: 1 + 1
    # Edges are walked in either direction, whatever their type.
    assert graph_store.neighbors(["f"], 2)["b"] == GraphPath(["f", "c", "b"], ["PART_OF", CO], [1.0, 1.0])
    both = graph_store.neighbors(["a", "f"], 1)
    assert both["a"].hops == 0 and both["f"].hops == 0 and both["c"] == GraphPath(["f", "c"], ["PART_OF"], [1.0])


def test_neighbors_limit_keeps_the_nearest_and_heaviest(graph_store):
    _chain(graph_store)
    assert set(graph_store.neighbors(["a"], 2, limit=2)) == {"a", "d"}
    assert set(graph_store.neighbors(["a"], 2, limit=4)) == {"a", "b", "d", "e"}


def test_find_entities_ranks_exact_then_prefix_then_mentions(graph_store):
    doc, chunks = _doc("F", 1)
    cid = chunks[0].id
    names = {"tree": "Tree", "tree sort": "Tree Sort", "binary tree": "Binary Tree", "street map": "Street Map",
             "graph": "Graph"}
    graph_store.write_document(
        doc, chunks, [Entity(key=k, name=n) for k, n in names.items()],
        [Mention(k, cid, 5 if k == "street map" else 1) for k in names], [],
    )
    assert [e.key for e in graph_store.find_entities("TREE")] == ["tree", "tree sort", "street map", "binary tree"]
    assert [e.key for e in graph_store.find_entities("tree", limit=2)] == ["tree", "tree sort"]
    assert graph_store.find_entities("no such thing") == []
    assert graph_store.find_entities("Ｇｒａｐｈ")[0].name == "Graph"


def test_get_entity_returns_every_alias_surface_form(graph_store):
    graph_store.upsert_entities([LCA])
    lca = graph_store.get_entity("lca")
    assert (lca.key, lca.name, lca.type, lca.curated) == ("lca", "LCA", "CONCEPT", False)
    assert sorted(lca.aliases) == sorted(["LCA", "Lowest Common Ancestor", "最近公共祖先"])
    assert graph_store.get_entity("missing") is None


INJECTIONS = ["'); DROP TABLE x;--", '" OR 1=1', "MATCH (n) DETACH DELETE n", "`backtick` {x: $y}",
              "最近公共祖先 🌳 \u202eRTL", "x'}) DETACH DELETE n //", '"; MATCH (m) DETACH DELETE m RETURN 1',
              "`Entity` ``", "$param", "{doc_id} \\ \\u0027 */ /*"]


def test_injection_looking_strings_are_stored_verbatim(graph_store):
    for text in INJECTIONS:
        doc, chunks = _doc(text, 1)
        entity = Entity(key=f"{text} key", name=text, type=text, aliases=[f"{text} alias"])
        graph_store.write_document(doc, chunks, [entity], [Mention(entity.key, chunks[0].id)], [])
    assert sorted(d.id for d in graph_store.list_documents()) == sorted(INJECTIONS)
    for text in INJECTIONS:
        assert graph_store.get_document(text).id == text
        got = graph_store.get_entity(f"{text} key")
        assert (got.name, got.type) == (text, text)
        assert sorted(got.aliases) == sorted([text, f"{text} alias"])
        assert graph_store.lookup_aliases([normalize_alias(f"{text} alias")]) == {
            normalize_alias(f"{text} alias"): [f"{text} key"]}
    assert graph_store.stats()["entities"] == len(INJECTIONS)
    assert graph_store.delete_document(INJECTIONS[0]) is True
    assert graph_store.stats()["documents"] == len(INJECTIONS) - 1


def test_a_failed_write_rolls_back_and_keeps_the_previous_version(graph_store):
    _write_a(graph_store)
    before = graph_store.stats()
    doc, chunks = _doc("A", 3, "h2")
    newcomer = Entity(key="newcomer", name="Newcomer", aliases=["nouveau"])
    with pytest.raises(StoreError, match="ghost"):
        graph_store.write_document(
            doc, chunks, [newcomer],
            [Mention("newcomer", "A#2"), Mention("ghost", "A#2")],  # "ghost" was never given or stored
            [],
        )
    assert graph_store.stats() == before
    assert graph_store.get_document("A").hash == "h1"
    assert graph_store.get_entity("newcomer") is None and "nouveau" not in graph_store.alias_table()
    assert graph_store.mentions_of(["lca"]) == {"lca": [("A#0", 2)]}
    assert graph_store.relation_weight("lca", "tree") == pytest.approx(3.0)


def test_mentions_must_reference_the_documents_own_chunks(two_docs):
    doc, chunks = _doc("C", 1)
    with pytest.raises(StoreError, match="B#0"):
        two_docs.write_document(doc, chunks, [BFS], [Mention("bfs", "B#0")], [])
    assert two_docs.get_document("C") is None
    assert two_docs.mentions_of(["bfs"]) == {"bfs": [("B#0", 3)]}


def test_injection_looking_strings_survive_relations_traversal_and_delete(graph_store):
    """Injection-looking keys, aliases and chunk ids go through every read and write verbatim."""
    doc_id, a, b = INJECTIONS[5], INJECTIONS[6], INJECTIONS[8]
    doc, chunks = _doc(doc_id, 1)
    cid = chunks[0].id
    graph_store.write_document(
        doc, chunks,
        [Entity(key=a, name=a, aliases=[INJECTIONS[7]]), Entity(key=b, name=b)],
        [Mention(a, cid, 2), Mention(b, cid)], [Relation(a, b, cid, INJECTIONS[3], 1.5)],
    )
    assert graph_store.neighbors([a], 1) == {a: GraphPath([a]), b: GraphPath([a, b], [INJECTIONS[3]], [1.5])}
    assert graph_store.relation_weight(b, a) == pytest.approx(1.5)
    assert graph_store.mentions_of([a]) == {a: [(cid, 2)]}
    assert graph_store.chunk_entities([cid]) == {cid: [a, b]}
    assert graph_store.lookup_aliases([normalize_alias(INJECTIONS[7])]) == {normalize_alias(INJECTIONS[7]): [a]}
    assert [e.key for e in graph_store.find_entities("detach delete")] == [a]
    assert graph_store.stats() == {"documents": 1, "chunks": 1, "entities": 2, "aliases": 3,
                                   "mentions": 2, "relations": 1}
    assert graph_store.delete_document(doc_id) is True
    assert graph_store.stats() == {"documents": 0, "chunks": 0, "entities": 0, "aliases": 0,
                                   "mentions": 0, "relations": 0}


# -- export (what `kgrag transfer` copies) ----------------------------------------------------
def test_export_document_round_trips_into_another_store(two_docs, tmp_path):
    """Writing every exported document (and the curated entities) into an empty store gives
    the same graph: counts, aliases, weights, mentions and paths."""
    from kgrag.stores.sqlite.graph import SqliteGraphStore

    two_docs.upsert_entities([Entity(key="glossary only", name="Glossary Only", aliases=["GO"], curated=True)])
    exported = two_docs.export_document("A")
    assert exported.document.id == "A" and exported.document.metadata == {"lang": "en"}
    assert [c.id for c in exported.chunks] == ["A#0", "A#1"]
    assert exported.chunks[0].text == "chunk 0 of A" and exported.chunks[1].section_path == "S1"
    assert sorted((m.entity_key, m.chunk_id, m.count) for m in exported.mentions) == [
        ("dfs", "A#1", 1), ("lca", "A#0", 2), ("tree", "A#0", 1), ("tree", "A#1", 1)]
    # one relation per evidencing chunk, with its own weight (CO_OCCURS kept as one orientation)
    assert sorted((min(r.source_key, r.target_key), max(r.source_key, r.target_key), r.chunk_id, r.weight)
                  for r in exported.relations) == [
        ("dfs", "tree", "A#1", 1.0), ("lca", "tree", "A#0", 1.0), ("lca", "tree", "A#1", 2.0)]
    assert {e.key: sorted(e.aliases) for e in exported.entities} == {
        "dfs": sorted(["DFS", "Depth-First Search"]), "lca": sorted(["LCA", "Lowest Common Ancestor", "最近公共祖先"]),
        "tree": sorted(["Tree", "trees", "树"])}
    assert two_docs.export_document("missing") is None
    assert [e.key for e in two_docs.curated_entities()] == ["glossary only"]

    copy = SqliteGraphStore(tmp_path / "copy.sqlite")
    try:
        copy.upsert_entities(two_docs.curated_entities())
        for doc in two_docs.list_documents():
            copy.write_document(*two_docs.export_document(doc.id))
        assert copy.stats() == two_docs.stats()
        assert copy.alias_table() == {k: sorted(v) for k, v in two_docs.alias_table().items()}
        assert copy.relation_weight("lca", "tree") == pytest.approx(3.5)
        assert copy.mentions_of(["lca", "tree", "bfs"]) == two_docs.mentions_of(["lca", "tree", "bfs"])
        assert copy.neighbors(["dfs"], 2) == two_docs.neighbors(["dfs"], 2)
        assert copy.get_entity("glossary only").curated is True
    finally:
        copy.close()


def test_document_hashes_and_chunk_ids(two_docs):
    assert two_docs.document_hashes() == {"A": "h1", "B": two_docs.get_document("B").hash}
    assert two_docs.document_chunk_ids() == {"A": {"A#0", "A#1"}, "B": {"B#0"}}
    two_docs.delete_document("A")
    assert two_docs.document_chunk_ids() == {"B": {"B#0"}}
    assert set(two_docs.document_hashes()) == {"B"}
