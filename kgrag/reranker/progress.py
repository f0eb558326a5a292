"""A training run's progress on a terminal: one tqdm bar per stage, redrawn as ``Progress``
reports arrive (``kgrag reranker train``); lines instead when stderr is not a terminal."""

from __future__ import annotations

import sys
from typing import Any

from kgrag.reranker.job import Progress


class ProgressBar:
    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.lines = not sys.stderr.isatty()
        self._bar: Any = None
        self._stage = ""
        self._said = ""

    def update(self, progress: Progress) -> None:
        if not self.enabled:
            return
        if self.lines:
            line = f"{progress.stage}: {progress.done}/{progress.total} {progress.detail}".rstrip()
            if progress.stage != self._stage or progress.done == progress.total or progress.done % 50 == 0:
                if line != self._said:
                    print(line, file=sys.stderr, flush=True)
                    self._said = line
            self._stage = progress.stage
            return
        from tqdm import tqdm

        if progress.stage != self._stage:
            self.close()
            self._bar = tqdm(total=progress.total or None, desc=progress.stage, unit="step", leave=True)
            self._stage = progress.stage
        bar = self._bar
        if progress.total and bar.total != progress.total:
            bar.total = progress.total
        bar.n = progress.done
        bar.set_postfix_str(progress.detail, refresh=False)
        bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
