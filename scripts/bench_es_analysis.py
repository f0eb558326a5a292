#!/usr/bin/env python
"""Which text analysis should the Elasticsearch chunk index use? Measures BM25 passage
retrieval on the shared benchmark sets with:

  presegmented  kgrag's ElasticsearchChunkIndex: kgrag.text.analyze terms (jieba + Snowball),
                whitespace analyser, combined_fields over heading^2 + body
  builtin       raw text, ``english`` analyser plus a ``cjk`` sub-field on title and text,
                multi_match most_fields over title^2, title.cjk^2, text, text.cjk
  sqlite        the embedded FTS5 store (the reference the ES store should agree with)

Reports recall@10 and MRR@10 against the gold passages, and, for the ES variants, how often
their top hit and top-10 set agree with SQLite's. Runs on osmem-server (bleve, not Lucene: its
BM25 and its analysers approximate Elasticsearch's, so read the figures as indicative).

    .venv/bin/python scripts/bench_es_analysis.py [--queries 300]

Measured on the 2-core dev machine (timings noisy), ``--queries 300``:

  cmrc2018_dev (848 passages)  recall@10  mrr@10  top1=sqlite  top10 overlap  query
    sqlite                      0.990      0.964
    presegmented                0.993      0.963   0.95         0.76           1.0 ms
    builtin                     0.997      0.977   0.94         0.33           2.3 ms
    presegm-body                0.993      0.960   0.97         0.85           0.9 ms
    builtin-body                0.997      0.957   0.91         0.53           2.1 ms
  hotpotqa_dev500 (4956)
    sqlite                      0.878      0.902
    presegmented                0.727      0.839   0.67         0.49           5.4 ms
    builtin                     0.718      0.838   0.65         0.47          13.5 ms
    presegm-body                0.878      0.785   0.65         0.80           2.1 ms
    builtin-body                0.865      0.764   0.61         0.77          12.2 ms

osmem scores multi-field queries (combined_fields included) as a sum of per-field scores, not
as BM25F: that, not the analysis, is what costs the two heading-weighted rows on hotpotqa.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kgrag.stores.elasticsearch.chunks import ElasticsearchChunkIndex  # noqa: E402
from kgrag.stores.sqlite.chunks import SqliteChunkIndex  # noqa: E402
from kgrag.text.analyze import analyze  # noqa: E402
from kgrag.types import Chunk  # noqa: E402
from tests import es_servers  # noqa: E402  (osmem-server with the plain-JSON transport)

BENCH = REPO.parent / "shared" / "bench"
K = 10


class BuiltinAnalysis:
    """Raw text in Elasticsearch's own analysers (the alternative to pre-segmenting)."""

    def __init__(self, client, index: str):
        self.client, self.index = client, index
        analysed = {"type": "text", "analyzer": "english", "fields": {"cjk": {"type": "text", "analyzer": "cjk"}}}
        client.indices.create(index=index, mappings={"properties": {"title": analysed, "text": analysed}})

    def upsert(self, chunks: list[Chunk]) -> None:
        from elasticsearch.helpers import bulk

        bulk(self.client, ({"_index": self.index, "_id": c.id, "_source": {"title": c.title, "text": c.text}}
                           for c in chunks), chunk_size=500)
        self.client.indices.refresh(index=self.index)

    def search(self, query: str, k: int, headings: bool = True) -> list[str]:
        fields = ["title^2", "title.cjk^2", "text", "text.cjk"] if headings else ["text", "text.cjk"]
        resp = self.client.search(index=self.index, size=k, source=False, query={"multi_match": {
            "query": query, "type": "most_fields", "fields": fields}})
        return [h["_id"] for h in resp["hits"]["hits"]]


def body_only(store: ElasticsearchChunkIndex, query: str, k: int) -> list[str]:
    """The pre-segmented index queried on its body field alone (osmem scores combined_fields
    as a sum of per-field scores, not as BM25F: this isolates the analysis from that)."""
    terms = " ".join(dict.fromkeys(analyze(query)))
    if not terms:
        return []
    resp = store._client.search(index=store.index, size=k, source=False,
                                query={"bool": {"must": {"match": {"body_terms": terms}}}})
    return [h["_id"] for h in resp["hits"]["hits"]]


def load(name: str, n_queries: int) -> tuple[list[Chunk], list[dict]]:
    folder = BENCH / name
    chunks = []
    with (folder / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            chunks.append(Chunk(id=r["id"], doc_id=r["id"], title=r.get("title", ""), text=r["text"]))
    queries = []
    with (folder / "queries.jsonl").open(encoding="utf-8") as f:
        for line in f:
            queries.append(json.loads(line))
            if len(queries) == n_queries:
                break
    return chunks, queries


def score(ranked: list[str], gold: list[str]) -> tuple[float, float]:
    top = ranked[:K]
    recall = len(set(top) & set(gold)) / len(gold)
    rr = next((1.0 / (i + 1) for i, cid in enumerate(top) if cid in gold), 0.0)
    return recall, rr


def run_set(name: str, n_queries: int, client, url: str) -> dict:
    chunks, queries = load(name, n_queries)
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = SqliteChunkIndex(Path(tmp) / "c.sqlite")
        pre = ElasticsearchChunkIndex(client, es_servers.fresh_index_name(), url=url, knn=False)
        builtin = BuiltinAnalysis(client, es_servers.fresh_index_name())
        searchers = {
            "sqlite": (lambda: sqlite.upsert(chunks, None), lambda q: [h.id for h in sqlite.search_bm25(q, K)]),
            "presegmented": (lambda: pre.upsert(chunks, None), lambda q: [h.id for h in pre.search_bm25(q, K)]),
            "builtin": (lambda: builtin.upsert(chunks), lambda q: builtin.search(q, K)),
            # Same indices, text fields only (indexing already done: index_s ~ 0).
            "presegm-body": (lambda: None, lambda q: body_only(pre, q, K)),
            "builtin-body": (lambda: None, lambda q: builtin.search(q, K, headings=False)),
        }
        ranked: dict[str, list[list[str]]] = {}
        for label, (index, search) in searchers.items():
            t0 = time.perf_counter()
            index()
            t_index = time.perf_counter() - t0
            t0 = time.perf_counter()
            ranked[label] = [search(q["question"]) for q in queries]
            t_query = (time.perf_counter() - t0) / len(queries)
            recall, rr = zip(*(score(r, q["gold_ids"]) for r, q in zip(ranked[label], queries)))
            out[label] = {"recall@10": sum(recall) / len(recall), "mrr@10": sum(rr) / len(rr),
                          "index_s": t_index, "query_ms": 1000 * t_query}
        for label in ("presegmented", "builtin", "presegm-body", "builtin-body"):
            pairs = list(zip(ranked[label], ranked["sqlite"]))
            out[label]["top1_agree_sqlite"] = sum(a[:1] == b[:1] for a, b in pairs) / len(pairs)
            out[label]["top10_overlap_sqlite"] = sum(
                len(set(a) & set(b)) / max(len(b), 1) for a, b in pairs) / len(pairs)
        sqlite.close()
        for index in (pre.index, builtin.index):
            es_servers.drop_index(client, index)
    return {"set": name, "passages": len(chunks), "queries": len(queries), "results": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--sets", default="cmrc2018_dev,hotpotqa_dev500")
    args = ap.parse_args()
    client, url, _ = es_servers.osmem_client()
    for name in args.sets.split(","):
        report = run_set(name, args.queries, client, url)
        print(f"\n{report['set']}: {report['passages']} passages, {report['queries']} queries")
        for label, r in report["results"].items():
            extra = "".join(f"  {k}={v:.2f}" for k, v in r.items() if "sqlite" in k)
            print(f"  {label:13s} recall@10={r['recall@10']:.3f}  mrr@10={r['mrr@10']:.3f}  "
                  f"index={r['index_s']:.1f}s  query={r['query_ms']:.1f}ms{extra}")


if __name__ == "__main__":
    main()
