"""Plain text, Markdown and source code: files whose bytes are already the text."""

from __future__ import annotations

from pathlib import Path

from kgrag.ingest.chunking.markdown import outline
from kgrag.ingest.loaders.base import decode_text, file_document, read_bytes
from kgrag.ingest.loaders.front_matter import front_matter
from kgrag.ingest.loaders.html import html_tables_as_markdown
from kgrag.text.markdown_tables import with_outer_pipes
from kgrag.types import Document

TEXT_SUFFIXES = frozenset({".txt", ".text", ".rst"})
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})

# Suffix → language name recorded in Document.metadata["language"]; the chunker uses it to
# pick how definitions are found (Python through `ast`, the rest through column-0 patterns).
CODE_LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".js": "javascript",
    ".ts": "typescript",
    ".java": "java",
    ".go": "go",
    ".rs": "rust",
    ".c": "c",
    ".cpp": "cpp",
    ".h": "c",
    ".rb": "ruby",
    ".php": "php",
    ".cs": "csharp",
    ".kt": "kotlin",
    ".scala": "scala",
    ".sh": "shell",
}


def load_text(path: Path, file_id: str | None = None) -> list[Document]:
    text = decode_text(path, read_bytes(path))
    return [file_document(path, file_id, path.stem, text, "txt")]


def load_markdown(path: Path, file_id: str | None = None) -> list[Document]:
    # Tables embedded as HTML, or written without outer pipes, become the piped Markdown tables
    # every reader of tables reads.
    text = decode_text(path, read_bytes(path))
    structure = outline(text)
    if (converted := html_tables_as_markdown(text, structure.fences)) != text:
        text, structure = converted, outline(converted)  # its fences moved
    text = with_outer_pipes(text, structure.fences)
    headings = structure.headings
    title = headings[0].title if headings else path.stem
    return [file_document(path, file_id, title, text, "md", front_matter=front_matter(text))]


def load_code(path: Path, file_id: str | None = None) -> list[Document]:
    text = decode_text(path, read_bytes(path))
    language = CODE_LANGUAGES[path.suffix.lower()]
    return [file_document(path, file_id, path.name, text, "code", metadata={"language": language})]
