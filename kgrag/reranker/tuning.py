"""The tuned numbers of reranker training, in one typed place (the runs that chose them:
docs/decisions.md, "The reranker trained on the knowledge base")."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrainingTuning:
    max_length: int = 128  # tokens per (question, passage) pair, in training and at query time
    negatives: int = 3  # hard negatives per query (a group is 1 positive + these)
    groups_per_step: int = 4  # queries per optimizer step
    epochs: int = 1  # passes over the training queries
    learning_rate: float = 1e-4  # AdamW, linear decay after warm-up
    warmup: float = 0.1  # fraction of the steps
    freeze_embeddings: bool = True  # token, position and type embeddings keep MiniLM's weights
    max_queries: int = 1200  # training queries at most (the time budget may stop it sooner)
    held_back: int = 100  # mined queries kept out of training to check the model on
    # Share of the training queries each source may take at most (a source with fewer gives its
    # share to the others).
    source_shares: tuple[tuple[str, float], ...] = (
        ("heading", 0.3), ("definition", 0.15), ("table_row", 0.15), ("relation", 0.15), ("two_hop", 0.1),
        ("sentence", 0.15), ("feedback", 1.0), ("gold", 1.0),
    )
    seed: int = 13


TRAINING = TrainingTuning()
