"""What a serving process pays to see one new document in the entity graph (SQLite store).

    .venv/bin/python benchmarks/graph_refresh.py --data-dir /tmp/kg/hotpot [--rounds 5]

The knowledge base must hold a corpus already (``kgrag ingest``); it is changed: each round
writes one small document (3 entities, 3 relations) through a second store object on the same
file — to SQLite, another process — and deletes it again. Reported, medians over rounds:
the first walk after the write (the reader brings its graph up to date by the changed pairs),
the same walk when the graph is already current, and a full rebuild of the graph (what every
reader paid after any write before ``graph_cache``). First, the first walk of a newly opened
store (a server start): without a saved snapshot (read every relation, save one), and with it.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from kgrag.stores.sqlite.graph import SqliteGraphStore
from kgrag.types import Chunk, Document, Entity, Mention, Relation


def one_document(n: int) -> tuple[Document, list[Chunk], list[Entity], list[Mention], list[Relation]]:
    doc_id = f"graph-refresh-{n}"
    text = "Ada Quillfeather founded the Quillfeather Institute in Marrowby."
    chunk = Chunk(id=f"{doc_id}#c0", doc_id=doc_id, text=text, ordinal=0, end=len(text))
    names = ["Ada Quillfeather", "Quillfeather Institute", "Marrowby"]
    entities = [Entity(key=name.lower(), name=name, type="ORG") for name in names]
    mentions = [Mention(entity_key=e.key, chunk_id=chunk.id) for e in entities]
    keys = [e.key for e in entities]
    relations = [Relation(source_key=a, target_key=b, type="CO_OCCURS", chunk_id=chunk.id)
                 for i, a in enumerate(keys) for b in keys[i + 1:]]
    doc = Document(id=doc_id, source=f"{doc_id}.txt", title="Graph refresh probe", hash=f"h{n}", format="txt")
    return doc, [chunk], entities, mentions, relations


def ms(t: float) -> float:
    return (time.perf_counter() - t) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    path = args.data_dir / "graph.sqlite"
    starts = ["ada quillfeather"]
    snapshot = Path(str(path) + ".walk.npz")
    snapshot.unlink(missing_ok=True)
    first_walk = {}
    for how in ("no snapshot: reads every relation", "loads the snapshot the first one saved"):
        store = SqliteGraphStore(path)
        t = time.perf_counter()
        store.neighbors(starts, hops=2)
        first_walk[how] = ms(t)
        store.close()
    reader, writer = SqliteGraphStore(path), SqliteGraphStore(path)
    reader.neighbors(starts, hops=2)
    after_write, current, rebuild = [], [], []
    for n in range(args.rounds):
        writer.write_document(*one_document(n))
        t = time.perf_counter()
        paths = reader.neighbors(starts, hops=2)
        after_write.append(ms(t))
        assert "marrowby" in paths, "the reader does not see the new document"
        t = time.perf_counter()
        reader.neighbors(starts, hops=2)
        current.append(ms(t))
        writer.delete_document(f"graph-refresh-{n}")
        reader.neighbors(starts, hops=2)
        t = time.perf_counter()
        with reader._graph_cache.lock, reader._db.read("rebuild") as conn:
            conn.execute("BEGIN")
            reader._graph_cache._rebuild(conn, 0)
            conn.execute("COMMIT")
        rebuild.append(ms(t))
    edges = reader._graph_cache.edges
    print(f"{path}: {edges} edges")
    for how, took in first_walk.items():
        print(f"  first walk of a newly opened store, {how}: {took:.0f} ms")
    print(f"medians over {args.rounds} rounds:")
    print(f"  first walk after another process wrote one document: {statistics.median(after_write):.1f} ms")
    print(f"  the same walk, graph current:                         {statistics.median(current):.1f} ms")
    print(f"  full rebuild (each reader after any write, before): {statistics.median(rebuild):.0f} ms")
    reader.close()
    writer.close()


if __name__ == "__main__":
    main()
