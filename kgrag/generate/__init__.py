"""Answers with checked citations from retrieved hits: through an LLM (litellm) when one is
configured, extractively from the best-supported source sentences otherwise."""

from kgrag.generate.generator import Generator
from kgrag.generate.types import Answer, Citation

__all__ = ["Answer", "Citation", "Generator"]
