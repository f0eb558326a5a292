"""Files written whole or not at all, with no fragment left behind (engine-free).

Three writers use this: the ONNX export of the embedder (~90 MB, minutes on 2 cores), the
graph snapshot beside ``graph.sqlite`` (78 MB at 100k passages) and the eval's knowledge-base
manifest. Each writes beside the target under a name carrying the writer's pid, then renames
over the target, so a concurrent reader sees the old file or the new one. ``written_whole`` adds what each lacked or had once alone:
a failed write deletes its fragment, and every write first deletes the fragments of writers
that are gone (a process killed mid-write cannot clean up). A live writer's fragment is left
to it.

Limitation: liveness is read from this machine's process table, so a writer in another PID
namespace (a container sharing the volume) looks dead; its rename then fails and that writer
reports the error as its own (the ONNX export falls back to sentence-transformers, the snapshot
is rebuilt at the next start).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FRAGMENT_SUFFIX = "partial"
# Fragments named by earlier versions (the graph snapshot wrote "<name>.<pid>.tmp").
_OLD_SUFFIXES = ("tmp",)


@contextmanager
def written_whole(target: Path) -> Iterator[Path]:
    """Yields the path to write (``<target>.<pid>.partial``); on a normal exit it replaces
    ``target`` at once, on an exception it is deleted and the exception goes on. Fragments of
    dead writers of ``target`` are deleted first."""
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_fragments(target)
    fragment = target.with_name(f"{target.name}.{os.getpid()}.{FRAGMENT_SUFFIX}")
    try:
        yield fragment
        os.replace(fragment, target)
    finally:
        fragment.unlink(missing_ok=True)


def remove_dead_fragments(target: Path) -> list[Path]:
    """Deletes ``target``'s fragments whose writing process is gone; returns what it deleted."""
    removed = []
    for suffix in (FRAGMENT_SUFFIX, *_OLD_SUFFIXES):
        for leftover in target.parent.glob(f"{target.name}.*.{suffix}"):
            pid = leftover.name[len(target.name) + 1 : -len(suffix) - 1]
            if pid.isdigit() and not running(int(pid)):
                leftover.unlink(missing_ok=True)
                removed.append(leftover)
    return removed


def running(pid: int) -> bool:
    """Whether a process with this pid exists on this machine (any user)."""
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True
