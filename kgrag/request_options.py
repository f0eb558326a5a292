"""No silent no-ops: what a question's options ask for, checked against what the configuration
can do, before retrieval runs (docs/asking.md, "Options the server cannot honour").

- An option that would change nothing without a missing part is refused: ``UnavailableOption``
  (a 400 naming the setting that provides the part). ``"rerank": true`` sent on a server
  without a cross-encoder is one.
- An option whose documented behaviour is to degrade runs degraded, and says so: a line in the
  trace's ``warnings``. The LLM options (``rewrite``, ``iterate_driver: "llm"``) without
  ``llm.model`` are those: retrieval answers from its LLM-free plan.

Callers (the HTTP routes, the CLI) pass the options as sent: None for one not sent, so that the
server's default (``rerank`` when a reranker is configured) is never refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgrag.config import Settings
from kgrag.errors import InputError
from kgrag.retrieve.llm_rewrites import REWRITES


class UnavailableOption(InputError):
    """A request option this server's configuration cannot honour; ``option`` names it and
    ``setting`` the configuration that would make it work."""

    def __init__(self, option: str, setting: str, message: str) -> None:
        self.option, self.setting = option, setting
        super().__init__(message)


def _env(setting: str) -> str:
    return "KGRAG_" + setting.upper().replace(".", "__")


def check_options(settings: Settings, *, rerank: bool | None = None, iterate: bool | None = None,
                  iterate_driver: str | None = None, rewrite: Sequence[str] | None = None) -> list[str]:
    """The warnings for the options that run degraded (the trace's ``warnings``); raises
    ``UnavailableOption`` for one that would do nothing."""
    retrieval, has_llm = settings.retrieval, bool(settings.llm.model)
    if rerank and not retrieval.reranker_path:
        raise UnavailableOption(
            "rerank", "retrieval.reranker_path",
            f"rerank: true needs a cross-encoder, and this server has none: set retrieval.reranker_path "
            f"({_env('retrieval.reranker_path')}) to a local cross-encoder directory, or leave rerank out")
    warnings: list[str] = []
    driver = iterate_driver or retrieval.iterate_driver
    iterating = retrieval.iterate if iterate is None else iterate
    if iterate_driver is not None and not iterating:
        warnings.append(f"iterate_driver {iterate_driver!r} has no effect: iteration is off "
                        f"({'iterate: false' if iterate is False else 'retrieval.iterate is false'})")
    elif driver == "llm" and iterating and not has_llm:
        asked = "iterate_driver 'llm'" if iterate_driver else "retrieval.iterate_driver 'llm'"
        warnings.append(f"{asked} needs an LLM and llm.model ({_env('llm.model')}) is unset: "
                        f"the rounds were planned without one (the 'entities' driver)")
    rewrites = list(rewrite) if rewrite is not None else [k for k in REWRITES if getattr(retrieval, k)]
    if rewrites and not has_llm:
        asked = f"rewrite {rewrites}" if rewrite is not None else f"retrieval.{' and retrieval.'.join(rewrites)}"
        warnings.append(f"{asked} needs an LLM and llm.model ({_env('llm.model')}) is unset: "
                        f"the question was searched as asked")
    return warnings
