"""Chunking: recursive, CJK-aware, structure-aware (Markdown sections, code definitions), parent–child."""

from kgrag.ingest.chunking.chunker import Chunker

__all__ = ["Chunker"]
