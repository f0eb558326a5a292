"""The graph explorer's routes on both graph stores (embedded SQLite + networkx, and the Neo4j
adapter on the real Neo4j 5): search by any alias, an entity's aliases, neighbours within
two hops with weights and the path to them, the chunks that mention it, and the chunks that
evidence an edge."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from kgrag.server.app import create_app
from kgrag.types import Entity
from tests.conftest import TWO_HOP, write_jsonl


@contextmanager
def _graph_settings(kind: str, tmp_path):
    from kgrag.config import Settings

    if kind == "sqlite":
        yield Settings(data_dir=tmp_path / "kb")
        return
    from tests.neo4j_servers import fresh_store, neo4j_server

    server = neo4j_server()
    with fresh_store(server, "explorer"):
        yield Settings(data_dir=tmp_path / "kb", graph_store="neo4j", neo4j=server.settings("explorer"))


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_explorer_routes_on_both_graph_stores(kind, tmp_path, embedder, recognizer):
    from kgrag.components import Components

    with _graph_settings(kind, tmp_path) as settings:
        components = Components(settings, embedder=embedder, recognizer=recognizer)
        try:
            corpus = write_jsonl(tmp_path / "two_hop.jsonl", TWO_HOP)
            glossary = [Entity(key="glass harbor", name="Glass Harbor", type="WORK_OF_ART",
                               aliases=["Klaassadam"], curated=True)]
            assert not components.ingest_job().run([corpus], glossary_entities=glossary, progress=False).failed
            client = create_app(settings, components, warm=False).test_client()

            found = client.get("/v1/entities?q=Klaassadam").get_json()["entities"]
            assert [e["key"] for e in found] == ["glass harbor"] and "Klaassadam" in found[0]["aliases"]

            entity = client.get("/v1/entities/glass harbor?hops=2").get_json()
            assert entity["name"] == "Glass Harbor" and entity["hops"] == 2
            by_key = {n["key"]: n for n in entity["neighbours"]}
            assert by_key["maret kuusik"]["hops"] == 1 and by_key["maret kuusik"]["via"] == []
            assert by_key["maret kuusik"]["weight"] > 0
            assert by_key["tartu"]["hops"] == 2 and by_key["tartu"]["via"] == ["maret kuusik"]
            assert len(by_key["tartu"]["weights"]) == 2
            hops = [n["hops"] for n in entity["neighbours"]]
            assert hops == sorted(hops)  # nearest first
            chunk = entity["chunks"][0]
            assert chunk["chunk_id"].startswith("film-glass-harbor") and "Maret Kuusik" in chunk["text"]
            assert chunk["title"] == "Glass Harbor" and chunk["count"] >= 1

            one_hop = client.get("/v1/entities/glass harbor").get_json()
            assert {n["hops"] for n in one_hop["neighbours"]} == {1} and "tartu" not in {n["key"] for n in one_hop["neighbours"]}
            # click through to a neighbour: it leads back
            back = client.get("/v1/entities/maret kuusik").get_json()
            assert "glass harbor" in {n["key"] for n in back["neighbours"]}
            assert client.get("/v1/entities/glass harbor?hops=3").status_code == 400

            # an edge of the drawing: the chunks that evidence it, either direction
            edge = client.get("/v1/relations?a=maret kuusik&b=glass harbor").get_json()
            assert edge["weight"] == pytest.approx(by_key["maret kuusik"]["weight"])
            assert edge["relations"] and sum(r["weight"] for r in edge["relations"]) == pytest.approx(edge["weight"])
            assert [c["chunk_id"] for c in edge["chunks"]] == list(dict.fromkeys(r["chunk_id"] for r in edge["relations"]))
            assert any("Maret Kuusik" in c["text"] and c["title"] for c in edge["chunks"])
            missing = client.get("/v1/relations?a=glass harbor&b=nobody")
            assert missing.status_code == 404 and missing.get_json()["error"]["code"] == "not_found"
            assert client.get("/v1/relations?a=glass harbor").status_code == 400
        finally:
            components.close()
