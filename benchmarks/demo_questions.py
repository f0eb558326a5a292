"""A newcomer's questions about the bundled demo, asked as ``scripts/serve`` answers them.

    .venv/bin/python benchmarks/demo_questions.py [--data-dir DIR] [--json OUT]

The demo (``kgrag/demo/corpus``: a Chinese permission guide with English lines, the LCA pages in
both languages, a few Wikipedia pages in each) is ingested with its glossary into ``--data-dir``
(a temporary folder by default; unchanged files are skipped when it exists), then each question
of ``benchmarks/demo_questions.jsonl`` is asked through the one asking seam
(``Components.asking``, extractive answers, the server's defaults), after its ``history`` turns
when it has some, each asked and answered first. A question with an ``expect`` string is right
when the answer holds it, wrong when it answers without it, declined when it abstains; a
question with ``expect`` null is one the demo cannot answer (off-topic, or a near miss), right
only when declined. One line per question, then the counts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = REPO / "benchmarks" / "demo_questions.jsonl"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, help="knowledge base folder (default: a temporary one)")
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--json", type=Path, help="write every question's outcome here")
    args = parser.parse_args()

    from kgrag.asking import AskRequest
    from kgrag.components import Components
    from kgrag.config import load_settings
    from kgrag.lexicon.glossary import load_glossary
    from kgrag.types import Turn

    with tempfile.TemporaryDirectory() as scratch:
        data_dir = args.data_dir or Path(scratch)
        comps = Components(load_settings(data_dir=data_dir))
        glossary = load_glossary(REPO / "kgrag" / "demo" / "glossary.csv")
        report = comps.ingest_job().run([REPO / "kgrag" / "demo" / "corpus"], glossary_entities=glossary)
        if report.failed:
            print(f"demo ingestion failed: {report.failed}", file=sys.stderr)
            return 1
        rows = []
        for line in args.questions.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            history: list[Turn] = []
            for earlier in item.get("history", []):
                asked = comps.asking.ask(AskRequest(earlier, history=tuple(history)))
                history.append(Turn(earlier, asked.answer.text, tuple(c.chunk_id for c in asked.answer.citations)))
            answer = comps.asking.ask(AskRequest(item["question"], history=tuple(history))).answer
            expect = item["expect"]
            if expect is None:
                outcome = "right" if answer.abstained else "wrong"
            else:
                outcome = "declined" if answer.abstained else "right" if expect in answer.text else "wrong"
            rows.append({**item, "outcome": outcome, "answer": answer.text})
            turns = " → ".join([*item.get("history", []), item["question"]])
            print(f"{outcome:8s} {turns}\n         {' '.join(answer.text.split())[:160]}")
        comps.close()

    answerable = [r for r in rows if r["expect"] is not None]
    unanswerable = [r for r in rows if r["expect"] is None]
    counts = {kind: sum(r["outcome"] == kind for r in answerable) for kind in ("right", "wrong", "declined")}
    declined = sum(r["outcome"] == "right" for r in unanswerable)
    print(f"\nanswerable {len(answerable)}: right {counts['right']}, wrong {counts['wrong']}, "
          f"declined {counts['declined']}; unanswerable {len(unanswerable)}: declined {declined}, "
          f"answered {len(unanswerable) - declined}")
    if args.json:
        args.json.write_text(json.dumps({"counts": counts, "unanswerable_declined": declined,
                                         "unanswerable": len(unanswerable), "rows": rows},
                                        ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
