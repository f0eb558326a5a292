"""Jupyter notebooks (.ipynb, nbformat 4 JSON) as Markdown: markdown cells as written, code cells
as fenced blocks in the notebook's language (never cut by the chunker), outputs left out (they
are results, often large, rarely prose). Titled by the first heading."""

from __future__ import annotations

import json
from pathlib import Path

from kgrag.ingest.chunking.markdown import outline
from kgrag.ingest.loaders.base import LoadError, decode_text, file_document, normalize_newlines, read_bytes
from kgrag.text.markdown_tables import with_outer_pipes
from kgrag.types import Document


def load_ipynb(path: Path, file_id: str | None = None) -> list[Document]:
    try:
        notebook = json.loads(decode_text(path, read_bytes(path)))
    except json.JSONDecodeError as e:
        raise LoadError(path, f"not a notebook: invalid JSON ({e.msg} at line {e.lineno})") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise LoadError(path, "not a notebook: no 'cells' list (nbformat 4 is read)")
    language = _language(notebook)
    blocks = []
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        text = normalize_newlines("".join(source) if isinstance(source, list) else str(source)).strip()
        if not text:
            continue
        if cell.get("cell_type") == "code":
            fence = "````" if "```" in text else "```"
            blocks.append(f"{fence}{language}\n{text}\n{fence}")
        elif cell.get("cell_type") == "markdown":
            blocks.append(with_outer_pipes(text, outline(text).fences))
    text = "\n\n".join(blocks)
    headings = outline(text).headings
    return [file_document(path, file_id, headings[0].title if headings else path.stem, text, "ipynb",
                          metadata={"language": language} if language else {})]


def _language(notebook: dict) -> str:
    metadata = notebook.get("metadata") or {}
    for value in ((metadata.get("language_info") or {}).get("name"), (metadata.get("kernelspec") or {}).get("language")):
        if isinstance(value, str) and value.strip():
            return value.strip().lower()
    return ""
