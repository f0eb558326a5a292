"""Files of records: CSV (one Document per row) and JSONL corpora (one Document per line).

A file of records is one unit: a malformed row or line fails the whole file with its line
number, so a corpus is never ingested with silent holes in it. Duplicate ids in one file fail
too (the later record would silently replace the earlier one).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from kgrag.ingest.loaders.base import (
    LoadError,
    content_hash,
    decode_text,
    document_id,
    normalize_newlines,
    read_bytes,
)
from kgrag.types import Document

_ID_COLUMNS = ("id",)
_TITLE_COLUMNS = ("title", "name")


def _column(header: list[str], names: tuple[str, ...]) -> str | None:
    lowered = {h.strip().lower(): h for h in header}
    return next((lowered[n] for n in names if n in lowered), None)


def _check_unique(path: Path, seen: dict[str, int], doc_id: str, where: int, unit: str) -> None:
    if doc_id in seen:
        raise LoadError(path, f"duplicate id {doc_id!r} on {unit}s {seen[doc_id]} and {where}")
    seen[doc_id] = where


def load_csv(path: Path) -> list[Document]:
    text = decode_text(path, read_bytes(path))
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text), dialect)
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise LoadError(path, "empty CSV file (no header row)") from None
    except csv.Error as e:
        raise LoadError(path, f"malformed CSV on line 1: {e}") from None
    id_col, title_col = _column(header, _ID_COLUMNS), _column(header, _TITLE_COLUMNS)
    file_id = document_id(path)
    docs: list[Document] = []
    seen: dict[str, int] = {}
    row_no = 0
    try:
        for values in reader:
            if not any(v.strip() for v in values):
                continue  # blank line
            row_no += 1
            if len(values) > len(header):
                raise LoadError(
                    path, f"line {reader.line_num}: {len(values)} fields but the header has {len(header)}"
                )
            row = {
                col: value.strip() for col, value in zip(header, values, strict=False)
            }  # short rows: blanks
            doc_id = (row.get(id_col) if id_col else "") or f"{file_id}#row{row_no}"
            _check_unique(path, seen, doc_id, row_no, "row")
            title = (row.get(title_col) if title_col else "") or ""
            body = "\n".join(f"{col}: {value}" for col, value in row.items() if value)
            docs.append(
                Document(
                    id=doc_id,
                    source=file_id,
                    title=title,
                    text=body,
                    hash=content_hash(title, body),
                    format="csv",
                    metadata={"row": row_no},
                )
            )
    except csv.Error as e:
        raise LoadError(path, f"malformed CSV on line {reader.line_num}: {e}") from None
    if not docs:
        raise LoadError(path, "no data rows (only a header)")
    return docs


def load_jsonl(path: Path) -> list[Document]:
    """The bench layout: one ``{"id", "title", "text"}`` object a line; other keys go to metadata."""
    text = decode_text(path, read_bytes(path))
    file_id = document_id(path)
    docs: list[Document] = []
    seen: dict[str, int] = {}
    for line_no, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise LoadError(path, f"line {line_no}: not valid JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(record, dict):
            raise LoadError(path, f"line {line_no}: expected a JSON object, got {type(record).__name__}")
        body, title = record.get("text"), record.get("title", "")
        if not isinstance(body, str):
            raise LoadError(path, f"line {line_no}: field 'text' is missing or not a string")
        if not isinstance(title, str):
            raise LoadError(path, f"line {line_no}: field 'title' is not a string")
        body = normalize_newlines(body)
        raw_id = record.get("id")
        if raw_id is not None and not isinstance(raw_id, (str, int)):
            raise LoadError(path, f"line {line_no}: field 'id' must be a string or an integer")
        doc_id = str(raw_id) if raw_id not in (None, "") else f"{file_id}#line{line_no}"
        _check_unique(path, seen, doc_id, line_no, "line")
        metadata = {k: v for k, v in record.items() if k not in ("id", "title", "text")}
        metadata["line"] = line_no
        docs.append(
            Document(
                id=doc_id,
                source=file_id,
                title=title,
                text=body,
                hash=content_hash(title, body),
                format="jsonl",
                metadata=metadata,
            )
        )
    if not docs:
        raise LoadError(path, "no records (empty JSONL file)")
    return docs
