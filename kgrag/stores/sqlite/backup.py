"""Copies of the embedded store files before a repair changes them (``kgrag.repair``).

``back_up``: SQLite's online backup API, page by page on a connection of its own: a consistent
copy even while another process writes, WAL content included. ``set_aside``: a damaged file
(one SQLite cannot read whole) is moved, with its WAL and side files, never deleted."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from kgrag.stores.sqlite.db import header_damage, is_damage

# Files SQLite and the stores keep beside a database file.
SIDE_SUFFIXES = ("-wal", "-shm", ".checked", ".walk.npz", ".lock")


def back_up(paths: Iterable[Path], into: Path) -> list[Path]:
    """Online backups of the files that exist into ``into`` (created); returns the copies.
    Raises OSError or sqlite3.Error when one cannot be made (then nothing may be deleted)."""
    copies = []
    for path in paths:
        if not path.exists():
            continue
        into.mkdir(parents=True, exist_ok=True)
        target = into / path.name
        source = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
        try:
            copy = sqlite3.connect(target)
            try:
                source.backup(copy)
            finally:
                copy.close()
        finally:
            source.close()
        copies.append(target)
    return copies


def set_aside(path: Path, into: Path) -> list[Path]:
    """Move ``path`` and its side files into ``into``; returns where they went."""
    moved = []
    into.mkdir(parents=True, exist_ok=True)
    for part in [path, *(path.with_name(path.name + suffix) for suffix in SIDE_SUFFIXES)]:
        if part.exists():
            target = into / part.name
            shutil.move(str(part), target)
            moved.append(target)
    return moved


def file_damage(path: Path, app_id: int) -> str | None:
    """Why an existing store file cannot be used as it is, or None (also for a missing one): its
    header and size (``header_damage``), then SQLite's own ``PRAGMA quick_check``."""
    if not path.exists():
        return None
    if (damage := header_damage(str(path), app_id, empty_ok=False)) is not None:
        return damage
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
        try:
            rows = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return str(exc) if is_damage(exc) else None
    return None if rows == ["ok"] else f"quick_check: {rows[0]}"


def writable(path: Path) -> bool:
    return os.access(path.parent if not path.exists() else path, os.W_OK)
