"""What only the Neo4j graph store promises: named Cypher, schema, dialect overrides, Browser
captions and guide, the shared driver, connection errors. Shared behaviour: tests/contract/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kgrag.config import Neo4jSettings
from kgrag.stores.base import StoreError
from kgrag.stores.neo4j.cypher_loader import DEFAULT_CYPHER_DIR, CypherLoader
from kgrag.stores.neo4j.graph import Neo4jGraphStore
from kgrag.testing.arcadedb import free_port
from kgrag.types import Chunk, Document, Entity, Mention, Relation
from tests.neo4j_servers import arcadedb_server, docker_server, env_server, fresh_store, neo4j_server

STORE_DIR = Path(__file__).resolve().parents[1] / "kgrag" / "stores" / "neo4j"
STORE_MODULES = sorted(p.name for p in STORE_DIR.glob("*.py"))


# -- the loader (no server) -------------------------------------------------------------------
def test_every_statement_the_store_names_exists_and_every_file_is_used():
    source = "\n".join((STORE_DIR / m).read_text() for m in STORE_MODULES)
    named = set(re.findall(r'rows\(\s*tx,\s*"([a-z_]+)"', source)) | set(re.findall(r'run_script\("([a-z_]+)"\)', source))
    on_disk = {p.stem for p in DEFAULT_CYPHER_DIR.glob("*.cypher")} - {"browser-guide"}
    assert named == on_disk
    loader = CypherLoader()
    for name in sorted(named - {"schema", "schema_fulltext"}):
        assert loader.statement(name)  # one non-empty statement each


def test_no_cypher_is_built_in_python():
    """Statements come from files; the store modules hold no Cypher keywords in strings."""
    for module in STORE_MODULES:
        text = (STORE_DIR / module).read_text()
        strings = re.findall(r'"[^"\n]*"', text)
        offenders = [s for s in strings if re.search(r"\b(MATCH|MERGE|CREATE|DELETE|UNWIND|RETURN)\b", s)]
        assert offenders == [], module


def test_loader_refuses_unknown_and_malformed_names(tmp_path):
    loader = CypherLoader()
    with pytest.raises(StoreError, match="no Cypher statement named 'no_such_statement'"):
        loader.statement("no_such_statement")
    for bad in ("../schema", "Schema", "a-b", ""):
        with pytest.raises(StoreError, match="not valid"):
            loader.statement(bad)
    with pytest.raises(StoreError, match="does not exist"):
        CypherLoader(tmp_path / "missing")


def test_dialect_override_is_read_instead_of_the_reference(tmp_path):
    (tmp_path / "arcadedb").mkdir()
    (tmp_path / "q.cypher").write_text("// reference\nRETURN 1 AS x\n")
    (tmp_path / "s.cypher").write_text("CREATE INDEX a IF NOT EXISTS FOR (n:A) ON (n.x);\n// two\nRETURN 2;\n")
    (tmp_path / "arcadedb" / "s.cypher").write_text("// nothing here on ArcadeDB\n")
    assert CypherLoader(tmp_path).statement("q") == "RETURN 1 AS x"
    assert CypherLoader(tmp_path).script("s") == ["CREATE INDEX a IF NOT EXISTS FOR (n:A) ON (n.x)", "RETURN 2"]
    arcade = CypherLoader(tmp_path, "arcadedb")
    assert arcade.statement("q") == "RETURN 1 AS x"  # no override: the reference text
    assert arcade.script("s") == []
    assert arcade.path("s") == tmp_path / "arcadedb" / "s.cypher"


def test_the_arcadedb_dialect_differs_only_where_named():
    overrides = sorted(p.name for p in (DEFAULT_CYPHER_DIR / "arcadedb").glob("*.cypher"))
    assert overrides == ["schema_fulltext.cypher"]
    assert CypherLoader(dialect="arcadedb").script("schema_fulltext") == []
    assert "CREATE FULLTEXT INDEX entity_names" in CypherLoader().script("schema_fulltext")[0]


def test_unreachable_server_is_a_store_error_naming_it():
    url = f"bolt://127.0.0.1:{free_port()}"
    with pytest.raises(StoreError, match=re.escape(url)):
        Neo4jGraphStore(Neo4jSettings(url=url, password="x", max_retry_s=0.5))


# -- against a server -------------------------------------------------------------------------
SERVERS = [
    pytest.param(neo4j_server, id="neo4j", marks=pytest.mark.neo4j),
    pytest.param(arcadedb_server, id="arcadedb", marks=pytest.mark.arcadedb),
    pytest.param(docker_server, id="docker", marks=pytest.mark.docker),
    pytest.param(env_server, id="env"),
]


@pytest.fixture(params=SERVERS)
def store(request):
    with fresh_store(request.param(), "store_tests") as s:
        yield s


def _session(store: Neo4jGraphStore):
    return store._run.driver.session(database=store._run.settings.database)


def _write_small(store: Neo4jGraphStore) -> None:
    doc = Document(id="doc/1", source="a.md", title="A title", hash="h")
    chunks = [Chunk(id="doc/1#c0", doc_id="doc/1", text="x" * 500, section_path="Intro", ordinal=0)]
    store.write_document(doc, chunks, [Entity("lca", "LCA", aliases=["Lowest Common Ancestor"]), Entity("tree", "Tree")],
                         [Mention("lca", "doc/1#c0"), Mention("tree", "doc/1#c0")],
                         [Relation("tree", "lca", "doc/1#c0")])


def test_schema_constraints_and_the_dialects_fulltext_index(store):
    with _session(store) as session:
        constraints = {r["name"] for r in session.run("SHOW CONSTRAINTS")}
        indexes = {r["name"]: r["type"] for r in session.run("SHOW INDEXES")}
    assert {"document_id", "chunk_id", "entity_key", "alias_key"} <= constraints
    if store.dialect == "arcadedb":
        assert "entity_names" not in indexes  # see cypher/arcadedb/schema_fulltext.cypher
    else:
        assert indexes.get("entity_names") == "FULLTEXT"
    Neo4jGraphStore(store._run.settings).close()  # schema statements are idempotent
    with _session(store) as session:
        assert {r["name"] for r in session.run("SHOW CONSTRAINTS")} == constraints


def test_every_node_has_a_readable_caption_and_the_design_model(store):
    _write_small(store)
    with _session(store) as session:
        captions = {(r["label"], r["name"]) for r in session.run(
            "MATCH (n) RETURN labels(n)[0] AS label, n.name AS name")}
        chunk = session.run("MATCH (:Document {id: 'doc/1'})-[:HAS_CHUNK]->(c:Chunk) RETURN c").single()["c"]
        related = session.run("MATCH (:Entity)-[r:RELATED]->(:Entity) RETURN r").single()["r"]
    assert captions == {("Document", "A title"), ("Chunk", "doc/1#c0"), ("Entity", "LCA"), ("Entity", "Tree"),
                        ("Alias", "lca"), ("Alias", "lowest common ancestor"), ("Alias", "tree")}
    assert len(chunk["preview"]) == 200 and chunk["section_path"] == "Intro"
    assert (related["type"], related["weight"], related["chunk_id"]) == ("CO_OCCURS", 1.0, "doc/1#c0")


def guide_queries() -> list[str]:
    """The saved queries of cypher/browser-guide.cypher, comments left out."""
    text = (DEFAULT_CYPHER_DIR / "browser-guide.cypher").read_text()
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    return [q.strip() for q in body.split(";") if q.strip()]


def test_browser_guide_queries_run_with_their_parameters(store):
    _write_small(store)
    queries = guide_queries()
    assert len(queries) == 9
    params = {"key": "lca", "alias": "lowest common ancestor", "doc_id": "doc/1", "limit": 25}
    results = []
    with _session(store) as session:
        for query in queries:
            if "db.index.fulltext" in query and store.dialect == "arcadedb":
                continue  # the one query the dialect cannot serve (no full-text index over Bolt)
            results.append(session.run(query, params).data())
    assert results[0][0]["aliases"] == ["LCA", "Lowest Common Ancestor"]
    assert sorted(results[0][0]["alias_keys"]) == ["lca", "lowest common ancestor"]
    assert [r["neighbour"] for r in results[3]] == ["tree"]
    assert [r["chunk"] for r in results[4]] == ["doc/1#c0"]
    assert {r["key"]: r["neighbours"] for r in results[5]} == {"lca": 1, "tree": 1}
    assert [(r["id"], r["chunks"]) for r in results[6]] == [("doc/1", 1)]


def test_a_label_the_graph_does_not_hold_yet_logs_no_warning(store, caplog):
    """Neo4j warns about every label, type or property its database has never held (an empty
    database; AuditEntry before the first alias change): normal for kgrag, so the store asks the
    server not to send those notifications, and the driver logs none."""
    import logging

    with caplog.at_level(logging.INFO, logger="neo4j.notifications"):
        summary = store._run.read("probe", lambda tx: tx.run(
            "MATCH (n:KgragNeverUsedLabel {kgrag_never_used_key: 1})-[:KGRAG_NEVER_USED]->() RETURN n").consume())
        assert store.stats()["documents"] == 0
    unrecognized = [n for n in summary.gql_status_objects if n.is_notification and n.raw_classification == "UNRECOGNIZED"]
    assert unrecognized == [] and [r.getMessage() for r in caplog.records if r.name == "neo4j.notifications"] == []


def test_mentions_per_key_are_cut_in_the_server(store, monkeypatch):
    """Retrieval reads 50 mentions of each reached entity; a hub has thousands, and carrying them
    all over Bolt, a record each, to drop them in Python made the graph path slow."""
    doc = Document(id="d", source="d.md", hash="h")
    chunks = [Chunk(id=f"d#c{i}", doc_id="d", text=f"hub text {i}", ordinal=i) for i in range(6)]
    store.write_document(doc, chunks, [Entity("hub", "Hub"), Entity("leaf", "Leaf")],
                         [Mention("hub", c.id, count=1 + i % 3) for i, c in enumerate(chunks)]
                         + [Mention("leaf", "d#c0")], [])
    received: list[int] = []
    rows = store._run.rows
    monkeypatch.setattr(store._run, "rows", lambda tx, name, **p: received.append(len(out := rows(tx, name, **p))) or out)
    assert store.mentions_of(["hub", "leaf", "nobody"], per_key=2) == {
        "hub": [("d#c2", 3), ("d#c5", 3)], "leaf": [("d#c0", 1)]}
    assert received == [2]  # one list of at most two mentions per key: nothing cut in Python
    assert store.mentions_of(["hub"], per_key=0) == {} and received == [2]
    assert len(store.mentions_of(["hub"])["hub"]) == 6


def test_stores_share_one_driver_per_server(store):
    other = Neo4jGraphStore(store._run.settings)
    try:
        assert other._run.driver is store._run.driver
    finally:
        other.close()
    assert store.stats()["documents"] == 0  # closing one store leaves the shared driver open


def test_closed_store_refuses_with_a_clear_error(store):
    other = Neo4jGraphStore(store._run.settings)
    other.close()
    with pytest.raises(StoreError, match="closed"):
        other.stats()


def test_an_invalid_document_is_refused_before_any_write(store):
    doc = Document(id="d", source="s")
    with pytest.raises(StoreError, match="belongs to document 'other'"):
        store.write_document(doc, [Chunk(id="c", doc_id="other", text="t")], [], [], [])
    with pytest.raises(StoreError, match="metadata is not JSON-serializable"):
        store.write_document(Document(id="d", source="s", metadata={"x": object()}), [], [], [], [])
    assert store.stats()["documents"] == 0


@pytest.mark.parametrize(("server", "dialect"), [
    pytest.param(neo4j_server, None, id="neo4j", marks=pytest.mark.neo4j),
    pytest.param(arcadedb_server, "arcadedb", id="arcadedb", marks=pytest.mark.arcadedb),
])
def test_factory_builds_the_neo4j_store_from_settings(tmp_path, server, dialect):
    from kgrag.config import Settings
    from kgrag.stores.factory import build_graph_store

    settings = server().settings("store_tests")
    built = build_graph_store(Settings(data_dir=tmp_path, graph_store="neo4j", neo4j=settings.model_dump()))
    try:
        assert isinstance(built, Neo4jGraphStore) and built.dialect == dialect
        assert set(built.stats()) == {"documents", "chunks", "entities", "aliases", "mentions", "relations"}
    finally:
        built.close()


# Notification categories that mean a statement must change: deprecated (gone in the next
# Cypher version), a plan that cannot scale, a hint or feature the server ignores.
_MUST_CHANGE = {"DEPRECATION", "PERFORMANCE", "HINT", "UNSUPPORTED"}


@pytest.mark.neo4j
def test_every_statement_compiles_on_neo4j_without_a_deprecation_or_performance_warning():
    from tests.neo4j_servers import WIPE_STATEMENTS

    with fresh_store(neo4j_server(), "store_tests") as store:
        _write_small(store)
        loader = CypherLoader()
        names = sorted(p.stem for p in DEFAULT_CYPHER_DIR.glob("*.cypher"))
        statements = {n: loader.statement(n) for n in names if n not in ("browser-guide", "schema", "schema_fulltext")}
        statements |= {f"browser-guide #{i + 1}": q for i, q in enumerate(guide_queries())}
        statements |= {f"test wipe #{i + 1}": q for i, q in enumerate(WIPE_STATEMENTS)}
        found = {}
        with _session(store) as session:
            for name, statement in statements.items():
                notes = session.run("EXPLAIN " + statement).consume().gql_status_objects
                bad = [f"{n.gql_status}: {n.status_description}" for n in notes
                       if n.is_notification and n.raw_classification in _MUST_CHANGE]
                if bad:
                    found[name] = bad
    assert len(statements) > 60 and found == {}


# Statements on hot paths that must find their start by an index, never by a scan (ArcadeDB
# scanned every RELATED edge for one form of relations_delete_by_chunk: hours instead of
# seconds on hotpotqa_dev500). Parameters: shaped like the store's.
INDEXED = {
    "relations_delete_by_chunk": {"chunk_ids": ["c"]},
    "relations_by_chunk": {"chunk_ids": ["c"]},
    "document_chunk_ids": {"doc_id": "d"},
    "document_mentioned_keys": {"doc_id": "d"},
    "entities_get": {"keys": ["k"]},
    "aliases_lookup": {"aliases": ["a"]},
    "mentions_of": {"keys": ["k"]},
    "mentions_top": {"keys": ["k"], "per_key": 50},
    "chunk_entities": {"chunk_ids": ["c"]},
    "neighbor_level": {"frontier": [{"key": "k", "score": 0.0}], "reached": ["k"], "room": 10},
}


# ArcadeDB's EXPLAIN prints a node lookup fed by UNWIND as "MATCH NODE (e:Entity)" although it
# seeks the index at run time (200 keys: 38 ms; one label scan of hotpot's 30k entities: 96 ms),
# so on ArcadeDB only statements whose start is a parameter are checked from the plan.
UNWIND_FED = {"entities_get", "aliases_lookup", "mentions_of", "mentions_top", "chunk_entities", "neighbor_level"}


def test_hot_statements_start_from_an_index(store):
    _write_small(store)
    plans = {}
    checked = [n for n in INDEXED if not (store.dialect == "arcadedb" and n in UNWIND_FED)]
    with _session(store) as session:
        for name in checked:
            params = INDEXED[name]
            plan = session.run("EXPLAIN " + store._run.cypher.statement(name), params).consume().plan
            plans[name] = json.dumps(plan)
    scans = [name for name, plan in plans.items() if "index" not in plan.lower()]
    assert scans == [], {name: plans[name][:400] for name in scans}
