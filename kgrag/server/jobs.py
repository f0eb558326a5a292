"""Long admin work the server runs (a glossary import) and how far it got, for
``GET /v1/jobs/<id>``: the client names the job (``X-Kgrag-Job``, as it names a conversation)
and asks for its progress while its request runs; ``kgrag aliases import --server`` shows it.
The last ``MAX_JOBS`` jobs are kept, in memory only."""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any

MAX_JOBS = 100
JOB_HEADER = "X-Kgrag-Job"
VALID_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


@dataclass
class Job:
    id: str
    kind: str
    state: str = "running"  # running, done, failed
    stage: str = "queued"
    done: int = 0
    total: int = 0
    started_at: float = 0.0
    finished_at: float | None = None
    message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Jobs:
    def __init__(self) -> None:
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()

    def start(self, job_id: str | None, kind: str) -> Job | None:
        """A new running job (a fresh id when none is given); None when one of that id runs."""
        job = Job(job_id or uuid.uuid4().hex, kind, started_at=time.time())
        with self._lock:
            held = self._jobs.get(job.id)
            if held is not None and held.state == "running":
                return None
            self._jobs[job.id] = job
            self._jobs.move_to_end(job.id)
            while len(self._jobs) > MAX_JOBS:
                self._jobs.popitem(last=False)
        return job

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)


def progress(job: Job):
    """A progress callback (stage, done, total) that records into ``job``."""

    def update(stage: str, done: int, total: int) -> None:
        job.stage, job.done, job.total = stage, done, total

    return update


def finish(job: Job, *, failed: bool, message: str) -> None:
    job.state, job.message, job.finished_at = ("failed" if failed else "done"), message, time.time()
