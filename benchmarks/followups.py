"""Follow-ups played as conversations, over a section corpus rebuilt as the pages it came from.

    .venv/bin/python benchmarks/followups.py ../shared/bench/handbook_dev102 [--work DIR] [--category C]

``kgrag eval`` scores a follow-up with its history as questions only, over the bench's corpus of
one document per section: there "And the next one?" has no next section in its document, and no
turn has cited anything. This script puts both back as a user meets them:

1. the sections (ids ``page.md#sNNN``) are joined, in order, into the Markdown pages they were
   split from and ingested as pages (default settings);
2. each question of ``--category`` (default: ``contextual_anaphora``) is asked after its
   ``meta.context``, three ways: **questions only** (the history ``kgrag eval`` sends; also what
   the code before positional follow-ups did with any history), **shown** (the context question
   retrieved first, its first hit remembered, as ``/v1/retrieve`` with a ``conversation_id``
   does), and **answered** (the context question answered by the configured generator, its
   citations remembered, as ``/v1/query`` and the web page do);
3. a hit finds the gold section when its span in the page overlaps the section by at least half
   of the section or 200 characters. R@1 and R@5 per way, and per question the rank of the gold
   section, are printed (JSON with ``--json``);
4. the follow-up is answered as the server answers it (``Generator.answer_to``: a positional one
   reads the row or list item asked for, ``kgrag.generate.extractive.list_neighbour``), and "answer" counts the
   answers holding a gold answer string (``kgrag.eval.answers.answer_contains``; an abstention
   holds none).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

WAYS = ("questions only", "shown", "answered")
KS = (1, 5)


def build_pages(corpus: Path, out: Path) -> dict[str, tuple[str, int, int]]:
    """Writes each page under ``out`` and returns section id → (page path, start, end)."""
    sections: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    for line in corpus.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        page, _, number = record["id"].rpartition("#s")
        sections[page].append((int(number), record["id"], record["text"].strip()))
    spans: dict[str, tuple[str, int, int]] = {}
    for page, parts in sections.items():
        text, offset = [], 0
        for _, section_id, body in sorted(parts):
            spans[section_id] = (page, offset, offset + len(body))
            text.append(body)
            offset += len(body) + 2  # the blank line joining sections
        path = out / page
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join(text) + "\n", encoding="utf-8")
    return spans


def gold_rank(hits, span: tuple[str, int, int]) -> int | None:
    """1-based rank of the first hit overlapping the gold section enough (see the module doc)."""
    page, start, end = span
    need = min((end - start) / 2, 200)
    for rank, hit in enumerate(hits, start=1):
        chunk = hit.chunk
        if chunk.doc_id == page and min(end, chunk.end) - max(start, chunk.start) >= need:
            return rank
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("bench", type=Path, help="a bench folder with corpus.jsonl and queries.jsonl")
    ap.add_argument("--work", type=Path, help="where pages and the knowledge base go (default: a temp dir)")
    ap.add_argument("--category", default="contextual_anaphora", help="meta.category of the questions played")
    ap.add_argument("--json", type=Path, help="write every question's ranks here")
    args = ap.parse_args()

    from kgrag.asking import remembered_chunks
    from kgrag.components import Components
    from kgrag.config import Settings
    from kgrag.eval.answers import answer_contains
    from kgrag.types import Turn

    work = args.work or Path(tempfile.mkdtemp(prefix="kgrag-followups-"))
    pages = work / "pages"
    spans = build_pages(args.bench / "corpus.jsonl", pages)
    questions = [q for q in map(json.loads, (args.bench / "queries.jsonl").read_text(encoding="utf-8").splitlines())
                 if q.get("meta", {}).get("category") == args.category and q["meta"].get("context")]
    if not questions:
        sys.exit(f"no question of category {args.category!r} with a meta.context in {args.bench}")
    comps = Components(Settings(data_dir=work / "kb"))
    t = time.perf_counter()
    cwd = os.getcwd()
    os.chdir(pages)  # document ids are paths relative to the working directory: "communication/chat.md"
    try:
        report = comps.ingest_job().run([Path(".")], progress=False)
    finally:
        os.chdir(cwd)
    print(f"{len(report.new)} pages ingested ({report.unchanged} unchanged, {len(report.failed)} failed) in {time.perf_counter() - t:.1f} s; "
          f"{len(spans)} sections", file=sys.stderr)
    retriever, generator = comps.retriever, comps.generator
    k = comps.settings.retrieval.top_k
    rows = []
    for q in questions:
        context = q["meta"]["context"]
        contexts = context if isinstance(context, list) else [context]
        earlier = [Turn(c) for c in contexts[:-1]]
        previous = retriever.retrieve(contexts[-1], top_k=k, history=earlier)
        answer = generator.answer(contexts[-1], previous.hits, abstain=previous.below_threshold)
        ids = [h.chunk.id for h in previous.hits]
        shown = remembered_chunks([], ids, abstained=False)
        cited = remembered_chunks([c.chunk_id for c in answer.citations], ids, answer.abstained)
        row = {"id": q["id"], "question": q["question"], "context": contexts[-1], "gold": q["gold_ids"][0],
               "cited": list(cited), "ranks": {}, "answers": {}, "contains": {}}
        for way, turn in zip(WAYS, (Turn(contexts[-1]), Turn(contexts[-1], None, shown),
                                    Turn(contexts[-1], answer.text, cited)), strict=True):
            result = retriever.retrieve(q["question"], top_k=k, history=[*earlier, turn])
            row["ranks"][way] = gold_rank(result.hits, spans[q["gold_ids"][0]])
            said = generator.answer_to(q["question"], result)
            row["answers"][way] = said.text
            row["contains"][way] = not said.abstained and answer_contains(said.text, q.get("answers") or [])
        rows.append(row)
    comps.close()
    print(f"| way ({len(rows)} {args.category} questions) | " + " | ".join(f"R@{n}" for n in KS) + " | answer |")
    print("|---|" + "---:|" * (len(KS) + 1))
    for way in WAYS:
        found = [sum(1 for r in rows if r["ranks"][way] is not None and r["ranks"][way] <= n) for n in KS]
        said = sum(1 for r in rows if r["contains"][way])
        print(f"| {way} | " + " | ".join(f"{100 * f / len(rows):.1f}" for f in [*found, said]) + " |")
    for r in rows:
        print(f"{r['id']}: {r['question']!r} after {r['context']!r}: " +
              ", ".join(f"{way} {r['ranks'][way]}" for way in WAYS), file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
