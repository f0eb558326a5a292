"""What a serving process pays to see one new document in the entity graph (SQLite store).

    .venv/bin/python benchmarks/graph_refresh.py --data-dir /tmp/kg/hotpot [--rounds 5]

The knowledge base must hold a corpus already (``kgrag ingest``); it is changed: each round
writes one small document (3 entities, 3 relations) through a second store object on the same
file — to SQLite, another process — and deletes it again. Reported, medians over rounds:
the first walk after the write (the reader brings its graph up to date by the changed pairs),
the same walk when the graph is already current, and a full rebuild of the graph (what every
reader paid after any write before ``graph_cache``).
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
    reader, writer = SqliteGraphStore(path), SqliteGraphStore(path)
    starts = ["ada quillfeather"]
    t = time.perf_counter()
    reader.neighbors(starts, hops=2)
    first_build = ms(t)
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
            reader._graph_cache._rebuild(conn)
            conn.execute("COMMIT")
        rebuild.append(ms(t))
    edges = reader._graph_cache.graph.number_of_edges()
    print(f"{path}: {edges} edges; first build {first_build:.0f} ms; medians over {args.rounds} rounds:")
    print(f"  first walk after another process wrote one document: {statistics.median(after_write):.1f} ms")
    print(f"  the same walk, graph current:                         {statistics.median(current):.1f} ms")
    print(f"  full rebuild (every reader, after every write, before): {statistics.median(rebuild):.0f} ms")
    reader.close()
    writer.close()


if __name__ == "__main__":
    main()
