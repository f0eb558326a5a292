"""GraphStore contract, alias administration: add/remove aliases, rename, merge, split, delete,
late mention linking and the audit log. Every graph store runs these through the protocol."""

from __future__ import annotations

import pytest

from kgrag.stores.base import AuditEntry, GraphStore, StoreError
from kgrag.types import Chunk, Document, Entity, Mention, Relation

CO = "CO_OCCURS"
LCA = Entity(key="lca", name="LCA", type="CONCEPT", aliases=["最低公共祖先"], curated=True)
LOWEST = Entity(key="lowest common ancestor", name="Lowest Common Ancestor", type="ORG")
ZH = Entity(key="最近公共祖先", name="最近公共祖先", type="CONCEPT", aliases=["最近共同祖先"])
TREE = Entity(key="tree", name="Tree", aliases=["trees"])
KEYS = ["lca", "lowest common ancestor", "最近公共祖先", "tree"]


def _doc(doc_id: str, n: int) -> tuple[Document, list[Chunk]]:
    doc = Document(id=doc_id, source=f"{doc_id}.md", title=doc_id, hash="h", format="md")
    return doc, [Chunk(id=f"{doc_id}#{i}", doc_id=doc_id, text=f"chunk {i}", ordinal=i) for i in range(n)]


@pytest.fixture
def kb(graph_store: GraphStore) -> GraphStore:
    """Two documents naming one concept three ways (LCA, Lowest Common Ancestor, 最近公共祖先)."""
    doc, chunks = _doc("A", 2)
    graph_store.write_document(
        doc, chunks, [LCA, LOWEST, TREE],
        [Mention("lca", "A#0", 2), Mention("lowest common ancestor", "A#0"), Mention("lowest common ancestor", "A#1", 2),
         Mention("tree", "A#0"), Mention("tree", "A#1")],
        [Relation("lca", "tree", "A#0", CO), Relation("lowest common ancestor", "lca", "A#0", CO),
         Relation("tree", "lowest common ancestor", "A#0", CO), Relation("lowest common ancestor", "tree", "A#1", CO, 2.0)],
    )
    doc, chunks = _doc("B", 1)
    graph_store.write_document(
        doc, chunks, [ZH, TREE],
        [Mention("最近公共祖先", "B#0", 3), Mention("tree", "B#0")],
        [Relation("最近公共祖先", "tree", "B#0", CO)],
    )
    return graph_store


def _snapshot(store: GraphStore) -> dict:
    """Everything a merge or split may touch, in comparable form."""
    keys = [e.key for e in store.alias_admin.list_entities()]
    return {
        "stats": store.stats(),
        "mentions": store.mentions_of(keys),
        "weights": {(a, b): round(store.relation_weight(a, b), 9) for a in keys for b in keys if a < b},
        "aliases": {k: sorted(v) for k, v in store.alias_table().items()},
        "evidence": {d: sorted((r.source_key, r.target_key, r.type, r.chunk_id, round(r.weight, 9))
                               for r in store.export_document(d).relations)
                     for d in sorted(doc.id for doc in store.list_documents())},
    }


# -- aliases -----------------------------------------------------------------------------------
def test_add_aliases_skips_normalized_duplicates_and_is_idempotent(kb):
    added = kb.alias_admin.add_aliases("lca", ["Lowest Common Ancestor", "lca", "ＬＣＡ", "最近公共祖先", "LOWEST common-ancestor"])
    assert added == ["Lowest Common Ancestor", "最近公共祖先"]
    assert kb.get_entity("lca").aliases == ["LCA", "最低公共祖先", "Lowest Common Ancestor", "最近公共祖先"]
    # Now claimed twice: by lca and by the entities named so.
    assert sorted(kb.lookup_aliases(["lowest common ancestor"])["lowest common ancestor"]) == ["lca", "lowest common ancestor"]
    before = kb.stats()
    assert kb.alias_admin.add_aliases("lca", ["Lowest Common Ancestor"]) == []
    assert kb.stats() == before


def test_add_aliases_to_an_unknown_entity_is_refused(kb):
    before = _snapshot(kb)
    with pytest.raises(StoreError, match="no entity keyed 'nope'"):
        kb.alias_admin.add_aliases("nope", ["x"])
    assert _snapshot(kb) == before


def test_remove_aliases_by_normalized_form(kb):
    assert kb.alias_admin.remove_aliases("lca", ["l c a"]) == []
    assert kb.alias_admin.remove_aliases("lca", ["missing"]) == []
    kb.alias_admin.add_aliases("lca", ["Least Common Ancestor"])
    assert kb.alias_admin.remove_aliases("lca", ["LEAST common ancestor"]) == ["Least Common Ancestor"]
    assert "least common ancestor" not in kb.alias_table()
    assert kb.alias_admin.remove_aliases("lca", ["LEAST common ancestor"]) == []


def test_removing_the_name_is_refused_and_changes_nothing(kb):
    before = _snapshot(kb)
    with pytest.raises(StoreError, match="own name"):
        kb.alias_admin.remove_aliases("lca", ["L.C.A.", "trees"])
    assert _snapshot(kb) == before


# -- rename ------------------------------------------------------------------------------------
def test_rename_to_another_spelling_keeps_the_key(kb):
    entity = kb.alias_admin.rename_entity("tree", "TREE")
    assert (entity.key, entity.name) == ("tree", "TREE")
    assert entity.aliases == ["TREE", "trees"]
    assert kb.mentions_of(["tree"])["tree"] == [("A#0", 1), ("A#1", 1), ("B#0", 1)]


def test_rename_moves_everything_to_the_new_key_and_keeps_the_old_name_as_alias(kb):
    before = _snapshot(kb)
    entity = kb.alias_admin.rename_entity("lca", "Lowest common ancestor (LCA)")
    key = "lowest common ancestor lca"
    assert (entity.key, entity.name, entity.type, entity.curated) == (key, "Lowest common ancestor (LCA)", "CONCEPT", True)
    assert entity.aliases[0] == "Lowest common ancestor (LCA)" and entity.aliases[1:] == ["LCA", "最低公共祖先"]
    assert kb.get_entity("lca") is None
    assert kb.lookup_aliases(["lca"]) == {"lca": [key]}
    assert kb.mentions_of([key])[key] == before["mentions"]["lca"]
    assert kb.relation_weight(key, "tree") == pytest.approx(1.0)
    assert kb.relation_weight(key, "lowest common ancestor") == pytest.approx(1.0)
    after = kb.stats()
    assert {k: after[k] for k in ("entities", "mentions", "relations")} == {
        k: before["stats"][k] for k in ("entities", "mentions", "relations")}


def test_rename_onto_an_existing_key_is_refused(kb):
    before = _snapshot(kb)
    with pytest.raises(StoreError, match="already exists; merge"):
        kb.alias_admin.rename_entity("lca", "Tree")
    with pytest.raises(StoreError, match="no letters or digits"):
        kb.alias_admin.rename_entity("lca", " -- ")
    with pytest.raises(StoreError, match="no entity keyed"):
        kb.alias_admin.rename_entity("nope", "Whatever")
    assert _snapshot(kb) == before


# -- merge and split ---------------------------------------------------------------------------
def test_merge_moves_aliases_mentions_and_relations(kb):
    kept = kb.alias_admin.merge_entities("lca", ["lowest common ancestor", "最近公共祖先"])
    assert kept.key == "lca" and kept.name == "LCA" and kept.curated
    assert kept.aliases == ["LCA", "最低公共祖先", "Lowest Common Ancestor", "最近公共祖先", "最近共同祖先"]
    assert kb.get_entity("lowest common ancestor") is None and kb.get_entity("最近公共祖先") is None
    assert kb.lookup_aliases(["最近公共祖先", "lowest common ancestor"]) == {
        "最近公共祖先": ["lca"], "lowest common ancestor": ["lca"]}
    # counts summed per chunk; one mention row per (entity, chunk)
    assert kb.mentions_of(["lca"])["lca"] == [("A#0", 3), ("B#0", 3), ("A#1", 2)]
    # per_key keeps each key's most-mentioning chunks, ties by chunk id
    assert kb.mentions_of(["lca", "tree"], per_key=2) == {
        "lca": [("A#0", 3), ("B#0", 3)], "tree": kb.mentions_of(["tree"])["tree"][:2]}
    assert kb.mentions_of(["lca"], per_key=0) == {}
    # lca–tree: A#0 1 (own) + 1 (lowest's), A#1 2, B#0 1; lca–lowest (now a self-relation) is gone
    assert kb.relation_weight("lca", "tree") == pytest.approx(5.0)
    assert kb.stats() == {"documents": 2, "chunks": 3, "entities": 2, "aliases": 7, "mentions": 6, "relations": 1}
    assert sorted(p.nodes for p in kb.neighbors(["lca"], hops=1).values()) == [["lca"], ["lca", "tree"]]


def test_merge_then_split_restores_the_original_mentions_and_relations(kb):
    before = _snapshot(kb)
    kb.alias_admin.merge_entities("lca", ["lowest common ancestor", "最近公共祖先"])
    lowest = kb.alias_admin.split_entity("lca", ["Lowest Common Ancestor"], "Lowest Common Ancestor")
    assert (lowest.key, lowest.type, lowest.aliases) == ("lowest common ancestor", "ORG", ["Lowest Common Ancestor"])
    zh = kb.alias_admin.split_entity("lca", ["最近共同祖先"], "最近公共祖先")
    assert zh.aliases == ["最近公共祖先", "最近共同祖先"]
    assert _snapshot(kb) == before
    assert kb.get_entity("lca").aliases == ["LCA", "最低公共祖先"]


@pytest.mark.parametrize("first, second", [
    (("Lowest Common Ancestor", "Lowest Common Ancestor"), ("最近共同祖先", "最近公共祖先")),  # merge order
    (("最近共同祖先", "最近公共祖先"), ("Lowest Common Ancestor", "Lowest Common Ancestor")),  # reverse order
])
def test_splits_in_any_order_restore_evidence_between_merged_entities(kb, first, second):
    doc, chunks = _doc("C", 1)
    kb.write_document(doc, chunks, [LOWEST, ZH, TREE],
                      [Mention("lowest common ancestor", "C#0"), Mention("最近公共祖先", "C#0"), Mention("tree", "C#0")],
                      [Relation("lowest common ancestor", "最近公共祖先", "C#0", CO, 1.0),
                       Relation("最近公共祖先", "tree", "C#0", CO, 0.5), Relation("lowest common ancestor", "lca", "C#0", CO)])
    before = _snapshot(kb)
    kb.alias_admin.merge_entities("lca", ["lowest common ancestor", "最近公共祖先"])
    assert kb.relation_weight("lca", "tree") == pytest.approx(5.5)
    kb.alias_admin.split_entity("lca", [first[0]], first[1])
    kb.alias_admin.split_entity("lca", [second[0]], second[1])
    assert _snapshot(kb) == before
    assert kb.relation_weight("lowest common ancestor", "最近公共祖先") == pytest.approx(1.0)


def test_chained_merges_unwind_in_reverse(kb):
    before = _snapshot(kb)
    kb.alias_admin.merge_entities("lowest common ancestor", ["最近公共祖先"])
    kb.alias_admin.merge_entities("lca", ["lowest common ancestor"])
    lowest = kb.alias_admin.split_entity("lca", ["Lowest Common Ancestor", "最近公共祖先", "最近共同祖先"], "Lowest Common Ancestor")
    assert lowest.aliases == ["Lowest Common Ancestor", "最近公共祖先", "最近共同祖先"]
    kb.alias_admin.split_entity("lowest common ancestor", ["最近共同祖先"], "最近公共祖先")
    assert _snapshot(kb) == before


def test_split_restores_after_a_rename_of_the_kept_entity(kb):
    before = _snapshot(kb)["mentions"]
    kb.alias_admin.merge_entities("tree", ["lowest common ancestor"])
    kb.alias_admin.rename_entity("tree", "Rooted tree")
    kb.alias_admin.split_entity("rooted tree", [], "Lowest Common Ancestor")
    after = kb.mentions_of(["rooted tree", "lowest common ancestor"])
    assert after["rooted tree"] == before["tree"]
    assert after["lowest common ancestor"] == before["lowest common ancestor"]


def test_split_without_a_recorded_merge_moves_only_aliases(kb):
    kb.alias_admin.add_aliases("tree", ["Rooted tree", "有根树"])
    before = kb.mentions_of(["tree"])
    new = kb.alias_admin.split_entity("tree", ["有根树"], "Rooted tree")
    assert (new.key, new.name, new.curated) == ("rooted tree", "Rooted tree", True)
    assert new.aliases == ["Rooted tree", "有根树"]
    assert kb.get_entity("tree").aliases == ["Tree", "trees"]
    assert kb.mentions_of(["tree", "rooted tree"]) == before


def test_bad_merges_and_splits_change_nothing(kb):
    before = _snapshot(kb)
    with pytest.raises(StoreError, match="no entity keyed 'nope'"):
        kb.alias_admin.merge_entities("lca", ["tree", "nope"])
    with pytest.raises(StoreError, match="into itself"):
        kb.alias_admin.merge_entities("lca", ["lca"])
    with pytest.raises(StoreError, match="not an alias of 'lca'"):
        kb.alias_admin.split_entity("lca", ["Tree"], "Something")
    with pytest.raises(StoreError, match="own name"):
        kb.alias_admin.split_entity("lca", ["L.C.A"], "Something")
    with pytest.raises(StoreError, match="already exists"):
        kb.alias_admin.split_entity("lca", [], "Tree")
    assert _snapshot(kb) == before


def test_delete_entity(kb):
    assert kb.alias_admin.delete_entity("lowest common ancestor") is True
    assert kb.get_entity("lowest common ancestor") is None
    assert "lowest common ancestor" not in kb.alias_table()
    assert kb.relation_weight("lca", "lowest common ancestor") == 0
    assert kb.chunk_entities(["A#1"]) == {"A#1": ["tree"]}
    assert kb.stats()["relations"] == 2
    assert kb.alias_admin.delete_entity("lowest common ancestor") is False


# -- late linking ------------------------------------------------------------------------------
def test_add_mentions_raises_counts_and_is_idempotent(kb):
    n = kb.alias_admin.add_mentions(
        [Mention("lca", "B#0", 2), Mention("lca", "A#0", 1), Mention("lca", "gone#9", 1)],
        [Relation("tree", "lca", "B#0", CO), Relation("最近公共祖先", "lca", "B#0", CO), Relation("lca", "tree", "gone#9", CO)],
    )
    assert n == 1  # A#0 already has 2 ≥ 1; gone#9 is not a stored chunk
    assert kb.mentions_of(["lca"])["lca"] == [("A#0", 2), ("B#0", 2)]
    assert kb.relation_weight("lca", "tree") == pytest.approx(2.0)
    once = _snapshot(kb)
    assert kb.alias_admin.add_mentions([Mention("lca", "B#0", 2)], [Relation("lca", "tree", "B#0", CO)]) == 0
    assert _snapshot(kb) == once
    with pytest.raises(StoreError, match="unknown entity"):
        kb.alias_admin.add_mentions([Mention("nope", "B#0", 1)], [])
    assert _snapshot(kb) == once


# -- listing and the audit log -----------------------------------------------------------------
def test_list_entities_pages_by_key(kb):
    assert [e.key for e in kb.alias_admin.list_entities()] == sorted(KEYS)
    page = kb.alias_admin.list_entities(limit=2, offset=1)
    assert [e.key for e in page] == sorted(KEYS)[1:3]
    assert page[0].aliases == kb.get_entity(page[0].key).aliases


def test_audit_log_is_newest_first(graph_store):
    assert graph_store.audit.audit_log() == []
    for i in range(3):
        graph_store.audit.record_audit(AuditEntry(at=f"2025-01-0{i + 1}T00:00:00+00:00", who="ana", action="add",
                                            target="lca", details={"aliases": ["最近公共祖先", f"n{i}"]}))
    log = graph_store.audit.audit_log(limit=2)
    assert [e.details["aliases"][1] for e in log] == ["n2", "n1"]
    assert (log[0].who, log[0].action, log[0].target, log[0].at) == ("ana", "add", "lca", "2025-01-03T00:00:00+00:00")


def test_injection_looking_aliases_are_stored_verbatim(kb):
    evil = ["x'}) DETACH DELETE n //", 'a"; DROP TABLE aliases; --', "$param {key: 1}"]
    assert kb.alias_admin.add_aliases("lca", evil) == evil
    assert kb.get_entity("lca").aliases[-3:] == evil
    assert kb.alias_admin.remove_aliases("lca", evil[:1]) == evil[:1]
    renamed = kb.alias_admin.rename_entity("tree", "Tree'}) MATCH (n) DETACH DELETE n //")
    assert renamed.name == "Tree'}) MATCH (n) DETACH DELETE n //"
    assert kb.stats()["entities"] == 4 and kb.stats()["documents"] == 2
