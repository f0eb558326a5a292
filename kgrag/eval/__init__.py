"""Evaluation harness: benchmark sets in, retrieval ablation and answer metrics out.

``kgrag eval`` on the command line; from Python ``kgrag.eval.runner.run_eval`` (also reachable as
``kgrag.eval.run_eval``, imported on first use so ``kgrag --help`` stays fast).
"""

from __future__ import annotations


def __getattr__(name: str):
    if name in ("run_eval", "parse_modes"):
        from kgrag.eval import runner

        return getattr(runner, name)
    if name == "EvalReport":
        from kgrag.eval.report import EvalReport

        return EvalReport
    raise AttributeError(f"module 'kgrag.eval' has no attribute {name!r}")
