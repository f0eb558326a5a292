"""What an ingestion run reports: per-document progress (a bar and an optional callback), the
failures with their stage, counts, seconds per stage and the stores' totals."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Literal, TextIO

from tqdm import tqdm

from kgrag.stores.consistency import StoreDiff

STAGES = ("load", "chunk", "embed", "extract", "write", "prepare reads")


@dataclass
class Failure:
    path: str
    reason: str
    stage: str = "load"  # "load", "chunk" or "write" (a store failed: the server answers 503)


@dataclass(frozen=True)
class DocumentProgress:
    """One document done: ``done`` of ``total`` pending documents, written or failed."""

    done: int
    total: int
    doc_id: str
    ok: bool
    chunks_written: int  # in this run so far


ProgressCallback = Callable[[DocumentProgress], None]
# True: a bar on stderr (a terminal); "lines": a line now and then (a log, a pipe); False: none.
ProgressMode = bool | Literal["lines"]


class Progress:
    """Per-document progress: a tqdm bar (kept on screen when the run ends) naming the stage
    the current group of documents is in, or plain lines for output that is not a terminal
    (``ProgressLines``), and an optional callback per document."""

    def __init__(self, total: int, bar: bool, callback: ProgressCallback | None, lines: bool = False) -> None:
        self.total, self.done, self.callback = total, 0, callback
        self.bar = tqdm(total=total, unit="doc", desc="ingest", disable=not bar or total == 0, leave=True,
                        dynamic_ncols=True)
        self.lines = ProgressLines(total) if lines and total and not bar else None

    def stage(self, name: str, chunks: int) -> None:
        self.bar.set_postfix_str(f"{name} {chunks} chunks", refresh=True)
        if self.lines is not None:
            self.lines.stage(f"{name} {chunks} chunks")

    def document(self, doc_id: str, ok: bool, chunks_written: int) -> None:
        self.done += 1
        self.bar.update(1)
        if self.lines is not None:
            self.lines.document(self.done)
        if self.callback is not None:
            self.callback(DocumentProgress(self.done, self.total, doc_id, ok, chunks_written))

    def close(self) -> None:
        self.bar.close()
        if self.lines is not None:
            self.lines.close()


class ProgressLines:
    """Progress as lines on stderr, for a log or a pipe (no bar redrawn in place): "ingest:
    12/33 documents (embedding 240 chunks)" at most every ``EVERY_S`` seconds as documents finish,
    and at least every ``QUIET_S`` seconds while one group of documents is still being worked
    on (a thread), so a long run is never silent."""

    EVERY_S = 2.0
    QUIET_S = 8.0

    def __init__(self, total: int, out: TextIO | None = None) -> None:
        self.total, self.done, self.now = total, 0, "reading"
        self.out = out if out is not None else sys.stderr
        self.last = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="ingest-progress", daemon=True)
        self._thread.start()

    def stage(self, now: str) -> None:
        with self._lock:
            self.now = now

    def document(self, done: int) -> None:
        with self._lock:
            self.done = done
            if done == self.total or time.monotonic() - self.last >= self.EVERY_S:
                self._say()

    def _say(self) -> None:
        tail = "" if self.done == self.total else f" ({self.now})"
        print(f"ingest: {self.done}/{self.total} documents{tail}", file=self.out, flush=True)
        self.last = time.monotonic()

    def _beat(self) -> None:
        while not self._stop.wait(min(1.0, self.QUIET_S / 2)):
            with self._lock:
                if time.monotonic() - self.last >= self.QUIET_S and self.done < self.total:
                    self._say()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class IngestReport:
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    # Same content, stored by another ingestion revision (settings or kgrag): built again
    # (``kgrag.ingest.revision``).
    rebuilt: list[str] = field(default_factory=list)
    unchanged: int = 0
    # old id → new id: documents stored under the id an older kgrag gave their file (relative to
    # the working directory), deleted once the file was stored under its rooted id.
    renamed: dict[str, str] = field(default_factory=dict)
    failed: list[Failure] = field(default_factory=list)
    chunks_written: int = 0
    cross_lingual_completed: int = 0  # stored English chunks given a multilingual block (cross_lingual.py)
    store_check: StoreDiff = field(default_factory=StoreDiff)  # disagreements left at the start
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    wall_seconds: float = 0.0
    totals: dict[str, int] = field(default_factory=dict)  # store stats after the run
    # Optional LLM extraction's cost and skipped chunks (``kgrag.ingest.llm_extract.LLMCost``);
    # None when it is off.
    llm: dict | None = None

    @property
    def ok(self) -> bool:
        return not self.failed

    @property
    def chunks_per_second(self) -> float:
        return self.chunks_written / self.wall_seconds if self.wall_seconds > 0 else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["documents"] = {
            "new": len(self.new),
            "changed": len(self.changed),
            "rebuilt": len(self.rebuilt),
            "unchanged": self.unchanged,
            "failed": len(self.failed),
        }
        d["chunks_per_second"] = round(self.chunks_per_second, 2)
        d["seconds"] = {k: round(v, 3) for k, v in self.seconds.items()}
        d["wall_seconds"] = round(self.wall_seconds, 3)
        return d


def drop(report: IngestReport, doc_id: str) -> None:
    """A document that failed after classification is counted as failed, not new/changed/rebuilt."""
    for lst in (report.new, report.changed, report.rebuilt):
        if doc_id in lst:
            lst.remove(doc_id)


@contextmanager
def timed(report: IngestReport, stage: str):
    t = time.perf_counter()
    try:
        yield
    finally:
        report.seconds[stage] += time.perf_counter() - t
