"""The merge/split arithmetic on rows alone (``kgrag.stores.merge_split``); the same rules on
real stores, both engines, are tests/contract/test_alias_contract.py."""

from __future__ import annotations

from kgrag.stores.merge_split import (
    Evidence,
    EvidenceDiff,
    MergeRecord,
    merge_record,
    new_aliases,
    plan_move,
    plan_split,
)

CO = "CO_OCCURS"


def _apply(rows: Evidence, diff: EvidenceDiff) -> Evidence:
    """What a store holds after writing ``diff`` (unset first, then set), as the adapters do."""
    out = rows.copy()
    for key in diff.mentions_unset:
        del out.mentions[key]
    out.mentions.update(diff.mentions_set)
    for edge in diff.relations_unset:
        del out.relations[edge]
    out.relations.update(diff.relations_set)
    return out


def _graph() -> Evidence:
    """lca and lowest (one concept twice) both mention c1; each relates to tree; they relate
    to each other in c1."""
    return Evidence(
        mentions={("lca", "c1"): 2, ("lowest", "c1"): 1, ("lowest", "c2"): 3, ("tree", "c1"): 1},
        relations={("lca", "tree", CO, "c1"): 1.0, ("lowest", "tree", CO, "c2"): 2.0,
                   ("lca", "lowest", CO, "c1"): 1.0, ("tree", "lowest", "PART_OF", "c1"): 0.5},
    )


def test_move_sums_per_chunk_drops_self_relations_and_keeps_order_of_undirected_edges():
    rows = _graph()
    after = _apply(rows, plan_move(rows, "lowest", "lca"))
    assert after.mentions == {("lca", "c1"): 3, ("lca", "c2"): 3, ("tree", "c1"): 1}
    assert after.relations == {("lca", "tree", CO, "c1"): 1.0, ("lca", "tree", CO, "c2"): 2.0,
                               ("tree", "lca", "PART_OF", "c1"): 0.5}  # directed: direction kept


def test_a_move_writes_only_what_changes():
    rows = _graph()
    diff = plan_move(rows, "lowest", "lca")
    assert ("tree", "c1") not in diff.mentions_set and ("lca", "tree", CO, "c1") not in diff.relations_set
    assert sorted(diff.mentions_unset) == [("lowest", "c1"), ("lowest", "c2")]


def test_split_undoes_a_merge_exactly():
    rows = _graph()
    record = merge_record({"key": "lowest", "name": "Lowest", "type": "CONCEPT", "curated": False,
                           "aliases": ["Lowest"]}, rows)
    merged = _apply(rows, plan_move(rows, "lowest", "lca"))
    plan = plan_split("lca", "lowest", "CONCEPT", {"lowest"}, [MergeRecord.from_json(7, "lowest", **record)],
                      merged, entities={"lca", "tree", "lowest"}, chunks={"c1", "c2"})
    assert _apply(merged, plan.evidence) == rows
    assert (plan.restored, plan.rewritten, plan.repoint, plan.entity_type) == ([7], {}, [], "CONCEPT")


def test_split_of_a_gone_chunk_restores_what_is_left_and_never_goes_below_zero():
    rows = _graph()
    record = merge_record({"key": "lowest", "name": "Lowest", "type": "CONCEPT", "curated": False,
                           "aliases": []}, rows)
    merged = _apply(rows, plan_move(rows, "lowest", "lca"))
    del merged.mentions[("lca", "c2")]  # c2 re-ingested without the concept
    merged.relations[("lca", "tree", CO, "c1")] = 0.25  # and c1's evidence re-weighed lower
    del merged.relations[("lca", "tree", CO, "c2")]
    plan = plan_split("lca", "lowest", "CONCEPT", set(), [MergeRecord.from_json(1, "lowest", **record)],
                      merged, entities={"lca", "tree", "lowest"}, chunks={"c1"})
    after = _apply(merged, plan.evidence)
    assert after.mentions == {("lca", "c1"): 2, ("lowest", "c1"): 1, ("tree", "c1"): 1}
    assert after.relations == {("lca", "tree", CO, "c1"): 0.25, ("lca", "lowest", CO, "c1"): 1.0,
                               ("tree", "lowest", "PART_OF", "c1"): 0.5}


def test_new_aliases_skip_normalized_repeats_and_empty_forms():
    assert new_aliases(["lca"], ["LCA", "Lowest  Common Ancestor", "lowest common ancestor", "!!", ""]) == [
        ("Lowest  Common Ancestor", "lowest common ancestor")]
