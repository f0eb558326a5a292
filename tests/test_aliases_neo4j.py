"""The alias admin end to end with the Neo4j graph store (on the real Neo4j 5): the seed case,
merge/split and the audit log through the service, retrieval through the pipeline."""

from __future__ import annotations

import pytest

from kgrag.aliases.service import AliasService
from tests.test_aliases import QUESTION, doc_of, graph_state, ingest_seed


@pytest.mark.neo4j
def test_seed_case_merge_split_and_audit_on_neo4j(tmp_path, embedder, recognizer):
    from kgrag.components import Components
    from kgrag.config import Settings
    from tests.neo4j_servers import fresh_store, neo4j_server

    server = neo4j_server()
    with fresh_store(server, "aliases"):  # an empty database, emptied again afterwards
        settings = Settings(data_dir=tmp_path / "kb", graph_store="neo4j", neo4j=server.settings("aliases"))
        components = Components(settings, embedder=embedder, recognizer=recognizer)
        try:
            ingest_seed(components, tmp_path)
            service = AliasService.from_components(components, user="ana",
                                                   on_change=components.retriever.linker.invalidate)
            assert not doc_of(components.retriever.retrieve(QUESTION, modes=("graph",)).hits, "zh.md")
            change = service.add("LCA", ["最近公共祖先", "Lowest Common Ancestor"])
            assert change.details["absorbed"] == ["lowest common ancestor"]
            after = components.retriever.retrieve(QUESTION, modes=("graph",))
            assert [le.key for le in after.query.linked] == ["lca"] and doc_of(after.hits, "zh.md")

            before = graph_state(components.graph)
            service.merge("LCA", ["树的算法"])
            service.split("LCA", ["树的算法"], into="树的算法")
            restored = graph_state(components.graph)
            assert (restored["mentions"], restored["stats"], restored["weights"]) == (
                before["mentions"], before["stats"], before["weights"])
            assert [(e.who, e.action) for e in service.audit()] == [("ana", "split"), ("ana", "merge"), ("ana", "add")]
        finally:
            components.close()
