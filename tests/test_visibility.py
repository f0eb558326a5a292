"""A document committed by another writer (its own SQLite connections, as a CLI ingest in
another process has) is answered by a running server within 1 s, through BM25, dense search
and the graph. The figure across processes is ``benchmarks/visibility.py``'s (README)."""

from __future__ import annotations

import time

from kgrag.components import Components
from kgrag.ingest.loaders.base import content_hash
from kgrag.server.app import create_app
from kgrag.types import Document

WORD = "zqxvormsianprotocol"
TEXT = f"The {WORD} was adopted by the lighthouse keepers of Vormsi Island in 1921."


def _hit(client, question: str, mode: str) -> bool:
    body = client.post("/v1/retrieve", json={"question": question, "modes": [mode], "top_k": 5}).get_json()
    return any(h["doc_id"] == "vormsi" for h in body["hits"])


def test_a_document_committed_elsewhere_is_served_within_a_second(components, settings):
    seed = Document(id="seed", source="seed", title="Seed", text="Tartu is a city in Estonia on the Emajõgi river.",
                    hash=content_hash("Seed", "Tartu is a city in Estonia on the Emajõgi river.", "txt"))
    assert components.ingest_job().run_documents([seed]).ok
    client = create_app(settings, components, warm=False).test_client()
    assert not _hit(client, WORD, "bm25") and not _hit(client, TEXT, "dense")  # caches are built and warm

    writer = Components(settings, embedder=components.embedder, recognizer=components.recognizer)
    try:
        doc = Document(id="vormsi", source="vormsi", title="Vormsi", text=TEXT, hash=content_hash("Vormsi", TEXT, "txt"))
        assert writer.ingest_job().run_documents([doc]).ok
        committed = time.perf_counter()
    finally:
        writer.close()
    seen: dict[str, float] = {}
    while time.perf_counter() - committed < 1.0 and len(seen) < 3:
        for mode, question in (("bm25", WORD), ("dense", TEXT), ("graph", "Vormsi Island")):
            if mode not in seen and _hit(client, question, mode):
                seen[mode] = time.perf_counter() - committed
    assert set(seen) == {"bm25", "dense", "graph"}, f"not served within 1 s: {set(seen) ^ {'bm25', 'dense', 'graph'}}"
