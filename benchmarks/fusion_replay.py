"""Replay the fusion stage over cached path results: many fusion settings, one retrieval each.

    .venv/bin/python benchmarks/fusion_replay.py --data-dir /tmp/kgeval/eval/2wiki_dev468-... \\
        ../shared/bench/2wiki_dev468/queries.jsonl --cache /tmp/2wiki.paths.pkl \\
        --variant '{}' --variant '{"evidence_set": false}' --variant '{"unstructured_graph_weight": 1}'

Loads the models once, runs linking and the three paths once per question (the served code:
``Retriever.new_query`` + ``search_paths``; cached in ``--cache`` for the next run), then runs
``kgrag.retrieve.fusion.fuse`` once per variant and prints passage R@1/2/5/10 and AllGold@5,
overall and per question type (``meta.type`` / ``meta.category``). A variant is a JSON object
of fusion-stage retrieval settings laid over the knowledge base's settings; settings that
change what the paths return (hops, candidates, feedback) are refused — run the eval for those.
The figures equal ``kgrag eval``'s bm25+dense+graph row up to chunk dedupe.

The knowledge base must already hold the corpus (``kgrag eval`` builds one per set).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

FUSION_SETTINGS = {"fusion", "rrf_k", "weights", "keep_path_top", "evidence_set", "evidence_set_after",
                   "evidence_set_max", "unstructured_graph_weight"}
KS = (1, 2, 5, 10)


def path_results(components, queries, cache: Path | None):
    """[(query, its EvalQuery, path results)] and chunk id → document id, from the cache when
    it holds the same questions."""
    ids = [q.id for q in queries]
    if cache and cache.is_file():
        data = pickle.loads(cache.read_bytes())
        if data["ids"] == ids:
            return data["rows"], data["docs"]
    retriever = components.retriever
    rows, docs = [], {}
    for q in queries:
        query, own_links = retriever.new_query(q.question)
        results = retriever.search_paths(query, own_links=own_links)
        rows.append((query, results))
        missing = [h.id for r in results for h in r.hits if h.id not in docs]
        missing += [cid for r in results for cid in r.support if cid not in docs]
        docs.update((c.id, c.doc_id) for c in components.chunk_index.get(list(dict.fromkeys(missing))))
    if cache:
        cache.write_bytes(pickle.dumps({"ids": ids, "rows": rows, "docs": docs}))
    return rows, docs


def score(rows, queries, docs, settings, names_in) -> dict[str, dict[str, float]]:
    from kgrag.eval import metrics as m
    from kgrag.eval.runner import question_type
    from kgrag.retrieve.fusion import fuse

    by_type: dict[str, dict[str, list[float]]] = {}
    for (query, results), q in zip(rows, queries):
        items = fuse(results, query, settings, names_in=names_in).items
        ranked = m.distinct(docs[i.chunk_id] for i in items if i.chunk_id in docs)[: max(KS)]
        values = {f"R@{k}": m.recall_at_k(ranked, q.gold_ids, k) for k in KS}
        values["AllGold@5"] = m.all_gold_at_k(ranked, q.gold_ids, 5)
        for kind in ("all", question_type(q)):
            if kind:
                for name, v in values.items():
                    by_type.setdefault(kind, {}).setdefault(name, []).append(v)
    return {kind: {name: 100 * m.mean(v) for name, v in vs.items()} | {"n": len(vs["R@1"])}
            for kind, vs in by_type.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("queries", type=Path)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--cache", type=Path, help="pickle of the path results (written, then reused)")
    parser.add_argument("--variant", action="append", default=[], help="JSON fusion settings (repeatable)")
    args = parser.parse_args()
    variants = [json.loads(v) for v in args.variant] or [{}]
    for v in variants:
        unknown = set(v) - FUSION_SETTINGS
        if unknown:
            parser.error(f"{sorted(unknown)} are not fusion-stage settings; replayable: {sorted(FUSION_SETTINGS)}")

    from kgrag.components import Components
    from kgrag.config import load_settings
    from kgrag.eval.data import load_queries

    components = Components(load_settings(data_dir=args.data_dir))
    queries = load_queries(args.queries, args.limit)
    rows, docs = path_results(components, queries, args.cache)
    base = components.retriever.settings
    for variant in variants:
        table = score(rows, queries, docs, base.model_copy(update=variant), components.graph.chunk_entities)
        print(f"variant {json.dumps(variant)}")
        for kind, v in table.items():
            print(f"  {kind:24s} n={v['n']:5d} " + " ".join(f"{name} {v[name]:5.1f}" for name in
                                                         [f"R@{k}" for k in KS] + ["AllGold@5"]))
    components.close()


if __name__ == "__main__":
    main()
