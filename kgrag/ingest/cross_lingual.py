"""When Chinese documents arrive in a knowledge base of English ones, the English chunks already
stored get their multilingual (e5) block, so Chinese questions reach them on the dense path.

The routed embedder (``kgrag.models.routed``) gives a Latin-script passage an e5 block only when
its corpus is bilingual (``cross_lingual = "auto"``). An ingestion job judged that on its own
documents, so a knowledge base of English documents that later received Chinese ones kept its
English chunks MiniLM-only: a Chinese question could not find them by meaning. Now a job that
brings mainly-Han documents first completes every stored Latin-script chunk that lacks the
block (only that block is computed and added; its MiniLM block is kept), then writes its own
documents. In that order a crash mid-way converges: the Han documents are not yet stored, so
the next run completes the rest (chunks already completed are skipped by their vectors).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kgrag.models.base import CorpusEmbedder
from kgrag.stores.base import ChunkIndex
from kgrag.text.scripts import is_mainly_non_latin
from kgrag.types import Chunk

BATCH = 256  # chunks embedded and written together


def complete_multilingual_blocks(chunk_index: ChunkIndex, embedder: CorpusEmbedder,
                                 text_of: Callable[[Chunk], str], batch: int = BATCH) -> int:
    """Adds the e5 block to every stored searchable Latin-script chunk whose vector lacks it;
    returns how many were completed. ``text_of(chunk)`` is the text the job embeds for a chunk
    (title and heading included), so a completed vector equals a bilingual job's."""
    pending: list[tuple[Chunk, np.ndarray]] = []
    done = 0
    for chunk, vector in chunk_index.iter_chunks():
        if vector is None or not chunk.searchable or is_mainly_non_latin(text_of(chunk)):
            continue
        if embedder.lacks_multilingual_block(vector[None, :])[0]:
            pending.append((chunk, vector))
        if len(pending) >= batch:
            done += _complete(chunk_index, embedder, text_of, pending)
            pending = []
    if pending:
        done += _complete(chunk_index, embedder, text_of, pending)
    return done


def _complete(chunk_index: ChunkIndex, embedder: CorpusEmbedder, text_of: Callable[[Chunk], str],
              rows: list[tuple[Chunk, np.ndarray]]) -> int:
    chunks = [c for c, _ in rows]
    vectors = embedder.with_multilingual_block([text_of(c) for c in chunks], np.stack([v for _, v in rows]))
    chunk_index.upsert(chunks, vectors)
    return len(chunks)
