"""What every loader shares: the error type, document ids, content hashes, text decoding."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kgrag.errors import InputError
from kgrag.types import Document


class LoadError(InputError):
    """A file that could not be turned into documents; ``str()`` is ``"<path>: <reason>"``."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


def document_id(path: Path, root: Path | None = None) -> str:
    """A file's document id: its path relative to ``root`` (the folder or glob root it was
    ingested through, or ``--root``) when it lies under it, else its absolute path (POSIX).
    Never relative to the working directory: the same file ingested from anywhere is one
    document."""
    absolute = Path(os.path.abspath(path))
    if root is not None:
        try:
            return absolute.relative_to(os.path.abspath(root)).as_posix()
        except ValueError:
            pass
    return absolute.as_posix()


def legacy_document_id(path: Path) -> str:
    """The id kgrag gave a file before ids were rooted (relative to the working directory when
    under it, else absolute): an ingest finds and replaces such documents
    (``kgrag.ingest.job``)."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(os.getcwd()).as_posix()
    except ValueError:
        return absolute.as_posix()


def content_hash(title: str, text: str, *extra: str) -> str:
    """sha256 of title + "\\n" + text (+ "\\n" + each extra part that changes the chunks)."""
    h = hashlib.sha256()
    h.update(title.encode("utf-8"))
    h.update(b"\n")
    h.update(text.encode("utf-8"))
    for part in extra:
        h.update(b"\n")
        h.update(part.encode("utf-8"))
    return h.hexdigest()


def normalize_newlines(text: str) -> str:
    """Offsets are taken on this form, so every loader returns "\\n" newlines and no BOM."""
    return text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")


def decode_text(path: Path, data: bytes) -> str:
    """UTF-8 first (BOM stripped); otherwise whatever charset-normalizer detects."""
    try:
        return normalize_newlines(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        pass
    # UTF-16/32 files are full of NUL bytes, so the binary check comes after detection had a go
    # at the BOM-marked encodings.
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return normalize_newlines(data.decode("utf-16"))
        except UnicodeDecodeError:
            pass
    if b"\x00" in data[:8192]:
        raise LoadError(path, "binary file, not text")
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None:
        raise LoadError(path, "not a text file (could not detect its character encoding)")
    return normalize_newlines(str(best))


@contextmanager
def readable(path: Path) -> Iterator[None]:
    """Turn OS errors raised while reading ``path`` into a LoadError a user understands."""
    try:
        yield
    except PermissionError:
        raise LoadError(path, "permission denied") from None
    except IsADirectoryError:
        raise LoadError(path, "is a directory, not a file") from None
    except FileNotFoundError:
        reason = "broken symbolic link" if path.is_symlink() else "no such file"
        raise LoadError(path, reason) from None
    except OSError as e:
        raise LoadError(path, f"cannot read: {e.strerror or e}") from None


def read_bytes(path: Path) -> bytes:
    with readable(path):
        return path.read_bytes()


def check_readable(path: Path) -> None:
    """For loaders whose library opens the file itself: fail first with our own reasons."""
    with readable(path), path.open("rb") as f:
        f.read(1)


def file_document(
    path: Path, file_id: str | None, title: str, text: str, fmt: str, *, hash_extra: tuple[str, ...] = (),
    **fields: Any,
) -> Document:
    """One Document for one whole file; refuses a file with no text at all.

    ``file_id``: its id (``document_id``; None: its absolute path). ``hash_extra``: anything
    besides title and text that changes the chunks (PDF page starts).
    """
    if not text.strip():
        raise LoadError(path, "no text (empty file)")
    doc_id = file_id or document_id(path)
    return Document(
        id=doc_id,
        source=doc_id,
        title=title,
        text=text,
        hash=content_hash(title, text, *hash_extra),
        format=fmt,
        **fields,
    )


PAGE_SEPARATOR = "\n\n"


def paged_document(path: Path, file_id: str | None, title: str, pages: Sequence[tuple[int, str]],
                   fmt: str) -> Document:
    """One Document of numbered pages ((page number, text): a PDF's pages, a deck's slides),
    joined by ``PAGE_SEPARATOR``, each page's start offset kept so chunks know their page."""
    starts: list[tuple[int, int]] = []
    offset = 0
    for number, text in pages:
        starts.append((offset, number))
        offset += len(text) + len(PAGE_SEPARATOR)
    text = PAGE_SEPARATOR.join(text for _, text in pages)
    # Page starts change the chunks' page numbers, so they are part of the content hash.
    return file_document(path, file_id, title, text, fmt, pages=starts, hash_extra=(repr(starts),))
