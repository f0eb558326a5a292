"""kgrag transfer: an embedded knowledge base (real models) copied to the real Neo4j 5 and to a
second SQLite chunk index, then back; the graph-path inputs, the hits and the content digests
agree."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from kgrag.components import Components
from kgrag.config import Settings
from kgrag.transfer import TransferError, parse_kinds, plan_transfer, run_transfer
from kgrag.types import Entity
from tests.conftest import hotpot_records, write_jsonl
from tests.neo4j_servers import fresh_store, neo4j_server

N_DOCS = 25
# About the first N_DOCS passages of hotpotqa_dev500 (Moscow State University, Black Book, ...).
QUESTIONS = [
    "Which Sergei Aleksandrovich studied at Moscow State University?",
    "Who directed Black Book, the Dutch thriller film in which Halina Reijn acted?",
    "Where is Coty, the American beauty products manufacturer, based?",
    "What is the Black Book of the Admiralty?",
]


def test_parse_kinds_names_each_half():
    assert parse_kinds("neo4j,elasticsearch") == ("neo4j", "elasticsearch")
    assert parse_kinds("neo4j") == ("neo4j", None)
    assert parse_kinds("sqlite") == ("sqlite", "sqlite")
    assert parse_kinds(" Neo4j , sqlite ") == ("neo4j", "sqlite")
    with pytest.raises(TransferError, match="unknown store name"):
        parse_kinds("neo4j,mongodb")


def test_plan_refuses_a_missing_source_and_a_copy_onto_itself(tmp_path):
    settings = Settings(data_dir=tmp_path / "none")
    with pytest.raises(TransferError, match="does not exist"):
        plan_transfer(settings, "neo4j")
    (tmp_path / "none").mkdir()
    for name in ("graph.sqlite", "chunks.sqlite"):
        (tmp_path / "none" / name).touch()
    with pytest.raises(TransferError, match="nothing to transfer"):
        plan_transfer(settings, "sqlite")
    plan = plan_transfer(settings, "neo4j,sqlite", target_data_dir=tmp_path / "copy")
    assert (plan.graph, plan.chunks) == (True, True)
    assert (plan.target.graph_store, plan.target.chunk_store) == ("neo4j", "sqlite")
    assert plan.target.data_dir == tmp_path / "copy" and plan.source.data_dir == tmp_path / "none"


def _graph_inputs(graph, keys: list[str], starts: list[list[str]]) -> dict:
    """What the graph retrieval path reads from a store."""
    return {
        "stats": graph.stats(),
        "mentions": graph.mentions_of(keys),
        "chunk_counts": graph.entity_chunk_counts(keys),
        "aliases": {k: sorted(v) for k, v in graph.alias_table().items()},
        "neighbors": [graph.neighbors(s, 2, 50) for s in starts],
        "documents": {d.id: (d.hash, d.title, d.metadata) for d in graph.list_documents()},
    }


def _kb_digest(graph, chunk_index) -> str:
    """Every chunk with its vector's bytes, every document's export (chunks, entities with all
    aliases, mentions, relation evidence with weights), the curated entities, the alias table and
    the counts: equal digests = equal knowledge bases."""
    h = hashlib.sha256()
    for chunk, vector in sorted(chunk_index.iter_chunks(), key=lambda cv: cv[0].id):
        h.update(json.dumps(chunk.__dict__, sort_keys=True, ensure_ascii=False).encode())
        h.update(b"-" if vector is None else np.asarray(vector, dtype=np.float32).tobytes())
    for doc in sorted(graph.list_documents(), key=lambda d: d.id):
        content = graph.export_document(doc.id)
        h.update(repr((content.document, sorted(content.chunks, key=lambda c: c.id),
                       sorted(content.entities, key=lambda e: e.key), sorted(content.mentions, key=repr),
                       sorted(content.relations, key=repr))).encode())
    h.update(repr(sorted(graph.curated_entities(), key=lambda e: e.key)).encode())
    h.update(json.dumps({k: sorted(v) for k, v in graph.alias_table().items()}, sort_keys=True).encode())
    h.update(json.dumps(graph.stats(), sort_keys=True).encode())
    return h.hexdigest()


def _graph_hits(comps: Components) -> list[list[tuple[str, float]]]:
    return [[(h.chunk.id, round(h.score, 9)) for h in comps.retriever.retrieve(q, top_k=10, modes=("graph",)).hits]
            for q in QUESTIONS]


@pytest.mark.slow
@pytest.mark.neo4j
def test_transfer_to_neo4j_and_back(tmp_path, components, settings, embedder, recognizer):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", hotpot_records(N_DOCS))
    glossary = [Entity(key="glossary only", name="Glossary Only", aliases=["GO term"], curated=True)]
    report = components.ingest_job().run([corpus], glossary_entities=glossary, progress=False)
    assert report.ok, report.failed
    source = components.graph
    keys = sorted({k for ks in source.alias_table().values() for k in ks})
    starts = [[k] for k in keys[:: max(1, len(keys) // 30)]] + [keys[:3], keys[-5:]]
    expected = _graph_inputs(source, keys, starts)
    expected_hits = _graph_hits(components)
    assert any(expected_hits) and expected["stats"]["relations"] > 50
    source_digest = _kb_digest(source, components.chunk_index)
    source_chunks = {c.id: (c, v) for c, v in components.chunk_index.iter_chunks()}
    components.close()

    server = neo4j_server()
    with fresh_store(server, "transfer"):  # an empty database, emptied again afterwards
        neo4j = server.settings("transfer")
        to_server = plan_transfer(settings.model_copy(update={"neo4j": neo4j}), "neo4j,sqlite",
                                  target_data_dir=tmp_path / "copy")
        first = run_transfer(to_server)
        assert first.ok, first.to_dict()
        assert first.graph.written["documents"] == N_DOCS and first.graph.written["curated_entities"] == 1
        assert first.chunks.written["chunks"] == len(source_chunks)

        copied = Components(to_server.target, embedder=embedder, recognizer=recognizer)
        try:
            assert _graph_inputs(copied.graph, keys, starts) == expected
            assert copied.graph.get_entity("glossary only").curated is True
            assert _graph_hits(copied) == expected_hits
            assert _kb_digest(copied.graph, copied.chunk_index) == source_digest
            for chunk, vector in copied.chunk_index.iter_chunks():  # no re-embedding: same bytes
                original, original_vector = source_chunks[chunk.id]
                assert chunk == original
                assert (vector is None and original_vector is None) or np.array_equal(vector, original_vector)
        finally:
            copied.close()

        again = run_transfer(to_server)  # idempotent: nothing to rewrite, same counts
        assert again.ok and again.graph.written["documents"] == 0 and again.graph.written["skipped"] == N_DOCS
        assert again.graph.target_counts == expected["stats"]

        back = plan_transfer(to_server.target, "sqlite", target_data_dir=tmp_path / "back")
        assert (back.source.graph_store, back.target.graph_store) == ("neo4j", "sqlite")
        returned = run_transfer(back)
        assert returned.ok, returned.to_dict()
        home = Components(back.target, embedder=embedder, recognizer=recognizer)
        try:
            assert _graph_inputs(home.graph, keys, starts) == expected
            assert _graph_hits(home) == expected_hits
            assert _kb_digest(home.graph, home.chunk_index) == source_digest  # embedded → Neo4j → embedded
        finally:
            home.close()


@pytest.mark.neo4j
def test_cli_transfer_reports_and_verifies(tmp_path, monkeypatch):
    """`kgrag transfer` end to end through click, on stores filled without models."""
    import json

    from click.testing import CliRunner

    from kgrag.cli import main
    from kgrag.stores.sqlite.chunks import SqliteChunkIndex
    from kgrag.stores.sqlite.graph import SqliteGraphStore
    from kgrag.types import Chunk, Document, Mention, Relation

    kb = tmp_path / "kb"
    kb.mkdir()
    graph, index = SqliteGraphStore(kb / "graph.sqlite"), SqliteChunkIndex(kb / "chunks.sqlite")
    try:
        for d in range(3):
            doc = Document(id=f"d{d}", source=f"d{d}.txt", title=f"Doc {d}", hash=f"h{d}")
            chunks = [Chunk(id=f"d{d}#c{i}", doc_id=doc.id, text=f"text {d} {i}", ordinal=i) for i in range(2)]
            vectors = np.eye(4, dtype=np.float32)[:2]
            index.upsert(chunks, vectors)
            graph.write_document(doc, chunks, [Entity("a", "A"), Entity(f"e{d}", f"E{d}")],
                                 [Mention("a", chunks[0].id), Mention(f"e{d}", chunks[1].id)],
                                 [Relation("a", f"e{d}", chunks[1].id)])
    finally:
        graph.close()
        index.close()

    server = neo4j_server()
    with fresh_store(server, "transfer_cli") as target:
        neo4j = server.settings("transfer_cli")
        for key, value in (("URL", neo4j.url), ("USER", neo4j.user), ("PASSWORD", neo4j.password),
                           ("DATABASE", neo4j.database)):
            if value is not None:  # Neo4j Community: the server's default database
                monkeypatch.setenv(f"KGRAG_NEO4J__{key}", value)
        run = CliRunner().invoke(main, ["--data-dir", str(kb), "transfer", "--to", "neo4j", "--json", "--no-progress"])
        assert run.exit_code == 0, run.output
        body = json.loads(run.output)
        assert body["ok"] is True and "chunks" not in body
        assert body["graph"]["written"]["documents"] == 3 and body["graph"]["mismatches"] == []
        assert target.stats() == {"documents": 3, "chunks": 6, "entities": 4, "aliases": 4, "mentions": 6,
                                  "relations": 3}
        target.delete_document("d0")  # the target now lacks a document: a rerun restores it
        run = CliRunner().invoke(main, ["--data-dir", str(kb), "transfer", "--to", "neo4j", "--no-progress"])
        assert run.exit_code == 0, run.output
        assert "1 documents, 2 skipped" in run.output and "verified" in run.output
        shrunk = SqliteGraphStore(kb / "graph.sqlite")
        shrunk.delete_document("d1")  # the source shrinks: the target's extra document is reported
        shrunk.close()
        run = CliRunner().invoke(main, ["--data-dir", str(kb), "transfer", "--to", "neo4j", "--no-progress"])
        assert run.exit_code == 1 and "MISMATCH" in run.output and "the source lacks" in run.output
