"""Files of records: CSV and Excel workbooks (one Document per row) and JSONL corpora (one
Document per line).

A file of records is one unit: a malformed row or line fails the whole file with its line
number, so a corpus is never ingested with silent holes in it. Duplicate ids in one file fail
too (the later record would silently replace the earlier one).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from dataclasses import dataclass
from pathlib import Path

from kgrag.ingest.loaders.base import (
    LoadError,
    check_readable,
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


@dataclass(frozen=True)
class _Header:
    """A file's (or sheet's) column names, and which of them gives a row its id and its title."""

    names: list[str]
    id_col: str | None
    title_col: str | None

    @classmethod
    def of(cls, names: list[str]) -> _Header:
        return cls(names, _column(names, _ID_COLUMNS), _column(names, _TITLE_COLUMNS))


def _record(path: Path, source: str, header: _Header, values: list[str], default_id: str, seen: dict[str, int], where: int,
            fmt: str, metadata: dict) -> Document:
    """One row as a Document: its cells as "column: value" lines (blanks left out, a short row's
    missing cells blank), its id and title from an ``id`` / ``title`` or ``name`` column when
    the header has one (else ``default_id``, no title)."""
    row = {col: value.strip() for col, value in zip(header.names, values, strict=False)}
    id_col, title_col = header.id_col, header.title_col
    doc_id = (row.get(id_col) if id_col else "") or default_id
    _check_unique(path, seen, doc_id, where, "row")
    title = (row.get(title_col) if title_col else "") or ""
    body = "\n".join(f"{col}: {value}" for col, value in row.items() if value)
    return Document(id=doc_id, source=source, title=title, text=body, hash=content_hash(title, body),
                    format=fmt, metadata=metadata)


def load_xlsx(path: Path, file_id: str | None = None) -> list[Document]:
    """An Excel workbook: on each sheet, the first non-empty row is the header and every
    further non-empty row a record, as a CSV's (ids ``<file>#<sheet>#row<n>`` unless an ``id``
    column gives one). Cells are read as last computed (a formula's value), dates as ISO dates,
    whole numbers without ".0"; hidden sheets are left out."""
    import zipfile

    from openpyxl import load_workbook
    from openpyxl.utils.exceptions import InvalidFileException

    check_readable(path)
    try:
        workbook = load_workbook(path, read_only=True, data_only=True)
    except (InvalidFileException, zipfile.BadZipFile, KeyError, ValueError, OSError) as e:
        raise LoadError(path, f"not a valid .xlsx workbook: {e or type(e).__name__}") from None
    file_id = file_id or document_id(path)
    docs: list[Document] = []
    seen: dict[str, int] = {}
    try:
        for sheet in workbook.worksheets:
            if sheet.sheet_state != "visible":
                continue
            header: _Header | None = None
            row_no = 0
            for cells in sheet.iter_rows(values_only=True):
                values = [_cell_text(v) for v in cells]
                if not any(v.strip() for v in values):
                    continue
                if header is None:
                    header = _Header.of([v.strip() or f"column {i + 1}" for i, v in enumerate(values)])
                    continue
                row_no += 1
                docs.append(_record(path, file_id, header, values, f"{file_id}#{sheet.title}#row{row_no}", seen,
                                    len(docs) + 1, "xlsx", {"sheet": sheet.title, "row": row_no}))
    finally:
        workbook.close()
    if not docs:
        raise LoadError(path, "no data rows (every sheet empty or only a header)")
    return docs


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def load_csv(path: Path, file_id: str | None = None) -> list[Document]:
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
    columns = _Header.of(header)
    file_id = file_id or document_id(path)
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
            docs.append(_record(path, file_id, columns, values, f"{file_id}#row{row_no}", seen, row_no, "csv", {"row": row_no}))
    except csv.Error as e:
        raise LoadError(path, f"malformed CSV on line {reader.line_num}: {e}") from None
    if not docs:
        raise LoadError(path, "no data rows (only a header)")
    return docs


def load_jsonl(path: Path, file_id: str | None = None) -> list[Document]:
    """The bench layout: one ``{"id", "title", "text"}`` object a line; other keys go to metadata."""
    text = decode_text(path, read_bytes(path))
    file_id = file_id or document_id(path)
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
