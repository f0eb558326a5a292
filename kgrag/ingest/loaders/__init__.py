"""Document loaders: find files (``discover``) and turn one file into Documents (``load``).

Every failure is a ``LoadError`` carrying the path and a reason a user understands; the
ingestion job reports it and carries on with the other files.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from kgrag.ingest.loaders.base import LoadError, content_hash, document_id, legacy_document_id
from kgrag.ingest.loaders.html import load_html
from kgrag.ingest.loaders.mail import load_eml
from kgrag.ingest.loaders.notebook import load_ipynb
from kgrag.ingest.loaders.pdf import load_pdf
from kgrag.ingest.loaders.records import load_csv, load_jsonl, load_xlsx
from kgrag.ingest.loaders.slides import load_pptx
from kgrag.ingest.loaders.text import (
    CODE_LANGUAGES,
    MARKDOWN_SUFFIXES,
    TEXT_SUFFIXES,
    load_code,
    load_markdown,
    load_text,
)
from kgrag.ingest.loaders.word import load_docx
from kgrag.types import Document

__all__ = ["SUPPORTED_SUFFIXES", "LoadError", "SourceFile", "content_hash", "discover", "discover_files", "document_id",
           "legacy_document_id", "load", "roots_of"]

_LOADERS: dict[str, Callable[[Path, str | None], list[Document]]] = {
    **dict.fromkeys(TEXT_SUFFIXES, load_text),
    **dict.fromkeys(MARKDOWN_SUFFIXES, load_markdown),
    **dict.fromkeys(CODE_LANGUAGES, load_code),
    ".html": load_html,
    ".htm": load_html,
    ".pdf": load_pdf,
    ".docx": load_docx,
    ".pptx": load_pptx,
    ".eml": load_eml,
    ".ipynb": load_ipynb,
    ".csv": load_csv,
    ".xlsx": load_xlsx,
    ".jsonl": load_jsonl,
    ".ndjson": load_jsonl,
}

SUPPORTED_SUFFIXES: frozenset[str] = frozenset(_LOADERS)


def load(path: Path, file_id: str | None = None) -> list[Document]:
    """The Documents in one file (several for CSV, Excel and JSONL). ``file_id``: the file's id
    (``document_id``; None: its absolute path); a record's id starts with it unless the record
    names its own. Raises LoadError."""
    path = Path(path)
    suffix = path.suffix.lower()
    loader = _LOADERS.get(suffix)
    if loader is None:
        supported = ", ".join(sorted(SUPPORTED_SUFFIXES))
        what = f"'{suffix}'" if suffix else "(no extension)"
        raise LoadError(path, f"unsupported file type {what} (supported: {supported})")
    try:
        docs = loader(path, file_id)
    except RecursionError:  # a parser library's recursive walk over hostile nesting
        raise LoadError(path, "the file is nested too deeply to read") from None
    try:
        mtime: float | None = path.stat().st_mtime  # the date of last resort (kgrag.ingest.record_facets)
    except OSError:
        mtime = None
    for doc in docs:
        doc.file_mtime = mtime
    return docs


def _hidden(name: str) -> bool:
    return name.startswith(".")


def _lock_file(name: str) -> bool:
    """"~$report.docx": the lock file Office writes beside a document someone has open (a few
    bytes of owner name, no document): in a shared folder it failed every ingest of it."""
    return name.startswith("~$")


def _walk(directory: Path) -> list[Path]:
    found: list[Path] = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not _hidden(d)]  # pruning here stops the descent
        found.extend(Path(root) / f for f in files if not _hidden(f))
    return found


def _is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[")


def _supported(paths: list[Path]) -> list[Path]:
    return [p for p in paths if p.suffix.lower() in SUPPORTED_SUFFIXES and not _lock_file(p.name)]


class SourceFile(NamedTuple):
    """A file to load and the id it is known by (``document_id``)."""

    path: Path
    id: str


def _glob_root(pattern: str) -> Path:
    """The folder a glob starts from: its leading components without a wildcard
    (``docs/**/*.md`` → ``docs``, ``*.md`` → ``.``)."""
    parts = Path(pattern).parts
    fixed = next((i for i, part in enumerate(parts) if _is_glob(part)), len(parts))
    return Path(*parts[:fixed]) if fixed else Path(".")


def roots_of(paths: Sequence[str | Path], root: str | Path | None = None) -> list[Path]:
    """The folders ids are taken relative to in an ingest of ``paths``: ``root``, each
    directory given and each glob's root."""
    found = [Path(root)] if root is not None else []
    for raw in paths:
        given = str(raw)
        if Path(given).is_dir():
            found.append(Path(given))
        elif _is_glob(given) and not Path(given).exists():
            found.append(_glob_root(given))
    return found


def discover_files(paths: Sequence[str | Path], root: str | Path | None = None,
                   known_roots: Sequence[Path] = ()) -> tuple[list[SourceFile], list[LoadError]]:
    """Expand files, directories (recursive) and globs into files to load, sorted, unique, each
    with its document id: the path relative to ``root`` when given and the file lies under it,
    else relative to the directory or glob root it was found through; a file named by itself is
    relative to the deepest of ``known_roots`` (the folders earlier ingests went through) it
    lies under, else known by its absolute path. Never relative to the working directory.

    Files named explicitly are returned whatever their type (``load`` then says why one is
    unsupported); directories and globs contribute only supported files, skipping hidden
    files and directories and Office's lock files ("~$report.docx"). A path that matches
    nothing is an error in the second list.
    """
    files: dict[str, SourceFile] = {}  # keyed by absolute path: one file named twice loads once
    errors: list[LoadError] = []
    fixed_root = Path(root) if root is not None else None

    def add(candidates: list[Path], found_under: Path | None) -> None:
        for p in candidates:
            absolute = os.path.abspath(p)
            if fixed_root is not None and _under(absolute, fixed_root):
                file_id = document_id(p, fixed_root)
            else:
                file_id = document_id(p, found_under)
            known = files.get(absolute)
            if known is None or (known.id == Path(absolute).as_posix() and file_id != known.id):
                files[absolute] = SourceFile(p, file_id)  # a rooted id wins over an absolute one

    for raw in paths:
        given = str(raw)
        path = Path(given)
        if path.is_file() or (path.is_symlink() and not path.is_dir()):
            # a broken link is passed on so that load() reports it by name
            add([path], _deepest_root(os.path.abspath(path), known_roots))
        elif path.is_dir():
            everything = _walk(path)
            supported = _supported(everything)
            if not supported:
                errors.append(
                    LoadError(given, f"directory holds no supported files ({len(everything)} others)")
                )
            add(supported, path)
        elif _is_glob(given):
            matched = [Path(m) for m in glob.glob(given, recursive=True)]
            matched = [m for m in matched if m.is_file()]  # glob already skips hidden names
            supported = _supported(matched)
            if not matched:
                errors.append(LoadError(given, "no files match this pattern"))
            elif not supported:
                errors.append(
                    LoadError(given, f"pattern matches {len(matched)} files, none of a supported type")
                )
            add(supported, _glob_root(given))
        elif path.exists():
            errors.append(LoadError(given, "not a regular file or directory"))
        else:
            errors.append(LoadError(given, "no such file or directory"))
    ordered = sorted(files.values(), key=lambda f: f.path.as_posix())
    return ordered, errors


def _under(absolute: str, root: Path) -> bool:
    return Path(absolute).is_relative_to(os.path.abspath(root))


def _deepest_root(absolute: str, roots: Sequence[Path]) -> Path | None:
    under = [r for r in roots if _under(absolute, r)]
    return max(under, key=lambda r: len(Path(os.path.abspath(r)).parts)) if under else None


def discover(paths: Sequence[str | Path]) -> tuple[list[Path], list[LoadError]]:
    """``discover_files``' files without their ids."""
    files, errors = discover_files(paths)
    return [f.path for f in files], errors
