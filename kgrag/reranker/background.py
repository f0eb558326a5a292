"""``kgrag reranker train`` in a running server's background (``POST /v1/reranker/train``):
one run at a time, its progress recorded in a server job (``GET /v1/jobs/<id>``) as the command
line's bar shows it. Answering goes on meanwhile with the model the server loaded; the trained
one is installed whole (``kgrag.reranker.job``) and served from the next start."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kgrag.errors import InputError
from kgrag.reranker.job import Progress, TrainingReport, train_reranker, with_tuning

log = logging.getLogger(__name__)


class TrainingBusy(InputError):
    """A training run is already going on in this process (the route answers 409)."""


_RUNNING = threading.Lock()


def needs_torch() -> str | None:
    """Why training cannot run here, or None when it can."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return "training a reranker needs PyTorch: pip install 'kgrag[rerank]' (answering with the trained model does not)"
    return None


def start_training(components, *, minutes: float | None, queries: int | None,
                   on_progress: Callable[[Progress], None],
                   on_end: Callable[[TrainingReport | None, BaseException | None], None]) -> threading.Thread:
    """Starts the job in a daemon thread; raises ``TrainingBusy`` when one runs already."""
    if not _RUNNING.acquire(blocking=False):
        raise TrainingBusy("a reranker is being trained already: follow its job")

    def run() -> None:
        try:
            tuning = with_tuning(max_queries=queries) if queries else with_tuning()
            report = train_reranker(components, tuning=tuning, budget_s=minutes * 60 if minutes else None,
                                    report=on_progress)
        except BaseException as exc:  # noqa: BLE001 - the job records any failure; the server goes on
            log.warning("reranker training failed: %s: %s", type(exc).__name__, exc)
            on_end(None, exc)
        else:
            on_end(report, None)
        finally:
            _RUNNING.release()

    thread = threading.Thread(target=run, name="kgrag-reranker-train", daemon=True)
    thread.start()
    return thread
