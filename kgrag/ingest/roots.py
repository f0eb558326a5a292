"""The folders a knowledge base's files were ingested through (``<data_dir>/ingest_roots.json``):
a file later ingested by itself, and lying under one of them, keeps the id the folder's ingest
gave it (``guide/setup.md``), so re-ingesting one changed file replaces its document instead of
adding a second one under its absolute path."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from kgrag.atomic_files import written_whole

log = logging.getLogger(__name__)
ROOTS_FILE = "ingest_roots.json"


def remembered(data_dir: Path) -> list[Path]:
    """The absolute folders recorded in ``data_dir`` ([] when none or the file is unreadable)."""
    try:
        roots = json.loads((Path(data_dir) / ROOTS_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as e:
        log.warning("ignoring %s: %s", Path(data_dir) / ROOTS_FILE, e)
        return []
    return [Path(r) for r in roots if isinstance(r, str)] if isinstance(roots, list) else []


def remember(data_dir: Path, roots: Iterable[Path]) -> None:
    """Adds ``roots`` (made absolute) to ``data_dir``'s record."""
    known = [str(r) for r in remembered(data_dir)]
    added = [os.path.abspath(r) for r in roots]
    merged = sorted(set(known) | set(added))
    if merged == sorted(known):
        return
    target = Path(data_dir) / ROOTS_FILE
    with written_whole(target) as partial:
        partial.write_text(json.dumps(merged, ensure_ascii=False, indent=1), encoding="utf-8")
