"""Fine-tunes a cross-encoder from the shipped MiniLM on mined examples (needs PyTorch: the
``rerank`` extra; answering with the result does not).

The model is ``transformers``' ``BertForSequenceClassification`` with one label, its encoder
the MiniLM weights, its head new (seeded). Each step reads ``groups_per_step`` queries, each with
its positive and ``negatives`` hard negatives, and minimises the cross-entropy of the positive
among its group (the listwise loss FlagEmbedding's reranker trainer uses). The result is saved
as a transformers directory; ``kgrag.reranker.export`` writes its ONNX graph.
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgrag.reranker.mining import Example, group_passages
from kgrag.reranker.tuning import TrainingTuning
from kgrag.types import Chunk

# (step, steps, loss of the last step)
StepReport = Callable[[int, int, float], None]


@dataclass(frozen=True)
class Trained:
    steps: int
    queries: int  # training queries the steps read
    seconds: float
    stopped_early: bool  # the time budget ended it before the last planned step
    last_loss: float


def train(examples: Sequence[Example], chunks: dict[str, Chunk], base: Path, target: Path, tuning: TrainingTuning,
          *, report: StepReport | None = None, budget_s: float | None = None) -> Trained:
    """Trains on ``examples`` (each with exactly ``tuning.negatives`` negatives; fewer are
    padded by repeating) and saves the model and its tokenizer to ``target``. ``budget_s``: stop
    after this many seconds (the steps done are kept, the learning rate schedule is not cut)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # "newly initialized: classifier" is the point here
    started = time.perf_counter()
    torch.manual_seed(tuning.seed)
    rng = random.Random(tuning.seed)
    tokenizer = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(base), num_labels=1, local_files_only=True)
    if tuning.freeze_embeddings:  # half the weights; a few thousand pairs would only blur them
        for parameter in model.bert.embeddings.parameters():
            parameter.requires_grad_(False)
    model.train()
    group = tuning.negatives + 1
    per_epoch = max(1, math.ceil(len(examples) / tuning.groups_per_step))
    steps = per_epoch * tuning.epochs
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=tuning.learning_rate, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimizer, max(1, int(steps * tuning.warmup)), steps)
    loss_fn = torch.nn.CrossEntropyLoss()
    done, last, stopped = 0, float("nan"), False
    for step in range(steps):
        if budget_s is not None and time.perf_counter() - started > budget_s:
            stopped = True
            break
        at = (step % per_epoch) * tuning.groups_per_step
        batch = examples[at:at + tuning.groups_per_step]
        queries, passages = [], []
        for ex in batch:
            texts = group_passages(ex, chunks)
            while len(texts) < group:
                texts.append(texts[1 + rng.randrange(len(texts) - 1)])
            queries += [ex.query] * group
            passages += texts[:group]
        encoded = tokenizer(queries, passages, truncation=True, max_length=tuning.max_length, padding=True,
                            return_tensors="pt")
        logits = model(**encoded).logits.view(len(batch), group)
        loss = loss_fn(logits, torch.zeros(len(batch), dtype=torch.long))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        done, last = step + 1, float(loss.item())
        if report is not None:
            report(done, steps, last)
    model.eval()
    model.save_pretrained(str(target), safe_serialization=True)
    tokenizer.save_pretrained(str(target))
    return Trained(done, min(len(examples), done * tuning.groups_per_step), round(time.perf_counter() - started, 1),
                   stopped, round(last, 4))
