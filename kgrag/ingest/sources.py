"""Where a knowledge base's documents can be read again: what a rebuild of a lost or damaged
store re-ingests (``kgrag.repair``). Three kinds, all kept under the data dir:

* uploads: the files ``POST /v1/documents`` received, in ``uploads/<name>`` (a document's id
  is ``uploads/<name>``, or that plus the loader's row suffix for a CSV/JSONL file);
* posted texts: the documents ``POST /v1/documents`` received as JSON, each as its request
  fields in ``uploads/.posted/<digest of its id>.json`` (before issue 47 they lived only in the
  stores: a lost store lost them);
* ingest runs: the paths each ``kgrag ingest`` was given, as absolute paths with the working
  directory it ran in and its ``--root`` (document ids are made from paths relative to the
  folders ingested through, ``kgrag.ingest.roots``), in ``sources.json``.

A rebuild asks for documents by id (``find``); the ones no source holds any more are named.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgrag.atomic_files import written_whole
from kgrag.ingest import roots
from kgrag.ingest.loaders import LoadError, discover_files, load
from kgrag.ingest.loaders.base import content_hash
from kgrag.types import Document

log = logging.getLogger(__name__)

UPLOADS = "uploads"
POSTED = ".posted"
STAGING = ".incoming"
RUNS_FILE = "sources.json"
MAX_RUNS = 1000  # distinct ingest runs remembered (a run repeated with the same paths is one)


def upload_documents(path: Path, name: str) -> list[Document]:
    """The documents of an uploaded file read from ``path`` (staged or kept), named as uploads
    are: ``uploads/<name>``, with the loader's row suffix for a file of records. Raises
    LoadError."""
    loaded = load(path, f"{UPLOADS}/{name}")  # a row of a table file: uploads/<name>#row<n>
    for doc in loaded:
        doc.source = f"{UPLOADS}/{name}"
    return loaded


def posted_document(fields: dict[str, Any]) -> Document:
    """The Document ``POST /v1/documents`` makes of one JSON document (its request fields)."""
    text, title, fmt = fields["text"], fields.get("title", ""), fields.get("format", "txt")
    return Document(id=fields["id"], source=fields.get("source") or fields["id"], title=title, text=text,
                    hash=content_hash(title, text, fmt), format=fmt, metadata=dict(fields.get("metadata") or {}))


@dataclass
class Found:
    documents: list[Document] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # asked for, in no source
    failed: list[str] = field(default_factory=list)  # sources that could not be read, with why


class Sources:
    """The sources of the knowledge base in ``data_dir``."""

    def __init__(self, data_dir: Path | str):
        self.data_dir = Path(data_dir)
        self.uploads = self.data_dir / UPLOADS
        self.posted = self.uploads / POSTED

    # -- keeping ---------------------------------------------------------------------------
    def keep_posted(self, fields: dict[str, Any]) -> None:
        """Keep a JSON-posted document (its request fields) once it is ingested."""
        self.posted.mkdir(parents=True, exist_ok=True)
        with written_whole(self._posted_path(fields["id"])) as out:
            out.write_text(json.dumps(fields, ensure_ascii=False, sort_keys=True), encoding="utf-8")

    def forget(self, doc_id: str) -> None:
        """A document was deleted: a rebuild must not bring its posted text back."""
        self._posted_path(doc_id).unlink(missing_ok=True)

    def record_ingest(self, paths: Sequence[str | Path], root: str | Path | None = None) -> None:
        """Remember the paths an ingest run was given (absolute, with the working directory)
        and its ``--root``."""
        run: dict[str, Any] = {"cwd": os.getcwd(), "paths": [os.path.abspath(p) for p in paths]}
        if root is not None:
            run["root"] = os.path.abspath(root)
        runs = [r for r in self.runs() if r != run] + [run]
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with written_whole(self.data_dir / RUNS_FILE) as out:
            out.write_text(json.dumps(runs[-MAX_RUNS:], ensure_ascii=False, indent=1), encoding="utf-8")

    def runs(self) -> list[dict[str, Any]]:
        try:
            runs = json.loads((self.data_dir / RUNS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return [r for r in runs if isinstance(r, dict) and isinstance(r.get("paths"), list)] if isinstance(runs, list) else []

    # -- reading back ----------------------------------------------------------------------
    def find(self, wanted: Iterable[str]) -> Found:
        """The documents of ``wanted`` ids that a source holds, read as they were ingested:
        posted texts first, then uploads, then the files of the ingest runs (newest first)."""
        want = set(wanted)
        out = Found()
        for doc in self._all(out):
            if doc.id in want:
                want.discard(doc.id)
                out.documents.append(doc)
            if not want:
                break
        out.missing = sorted(want)
        return out

    def _all(self, out: Found) -> Iterator[Document]:
        if self.posted.is_dir():
            for path in sorted(self.posted.glob("*.json")):
                try:
                    yield posted_document(json.loads(path.read_text(encoding="utf-8")))
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    out.failed.append(f"{path.name}: {exc}")
        if self.uploads.is_dir():
            for path in sorted(self.uploads.iterdir()):
                if path.name.startswith(".") or not path.is_file():
                    continue
                try:
                    yield from upload_documents(path, path.name)
                except LoadError as exc:
                    out.failed.append(str(exc))
        known = roots.remembered(self.data_dir)
        for run in reversed(self.runs()):
            with _working_directory(run.get("cwd")):
                files, errors = discover_files(run["paths"], run.get("root"), known)
                out.failed += [str(e) for e in errors]
                for path, file_id in files:
                    try:
                        yield from load(path, file_id)
                    except LoadError as exc:
                        out.failed.append(str(exc))

    def _posted_path(self, doc_id: str) -> Path:
        return self.posted / f"{hashlib.sha256(doc_id.encode('utf-8')).hexdigest()[:32]}.json"


@contextmanager
def _working_directory(cwd: str | None) -> Iterator[None]:
    """A run's relative paths (and the ids of files ingested before ids were rooted) are read
    from the working directory of the run."""
    before = os.getcwd()
    if cwd and Path(cwd).is_dir():
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)
