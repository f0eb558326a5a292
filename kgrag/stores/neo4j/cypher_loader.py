"""Cypher statements by name, from ``cypher/<name>.cypher`` (never built from strings in code).

Where the folder is: ``KGRAG_CYPHER_DIR`` when set; else ``kgrag/cypher`` inside the installed
package (a wheel carries the repository's top-level ``cypher/`` there: pyproject.toml's
force-include); else the repository's ``cypher/`` beside the package (a checkout or an
editable install).

A dialect (e.g. ``arcadedb``) may override a statement with ``cypher/<dialect>/<name>.cypher``;
an override is the named, reviewable place where a server that is not Neo4j needs other text.
Neo4j is the reference: it reads the top-level files only.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

from kgrag.errors import StoreError

_PACKAGE = Path(__file__).resolve().parents[2]  # the kgrag package folder
INSTALLED_CYPHER_DIR = _PACKAGE / "cypher"
REPOSITORY_CYPHER_DIR = _PACKAGE.parent / "cypher"


def default_cypher_dir() -> Path:
    """The installed folder when the package carries one, else the repository's."""
    return INSTALLED_CYPHER_DIR if INSTALLED_CYPHER_DIR.is_dir() else REPOSITORY_CYPHER_DIR


DEFAULT_CYPHER_DIR = default_cypher_dir()
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class CypherLoader:
    """Loads and caches statements; safe to share between threads."""

    def __init__(self, root: Path | str | None = None, dialect: str | None = None):
        # KGRAG_CYPHER_DIR: another folder of statements (e.g. one under review).
        self.root = Path(root or os.environ.get("KGRAG_CYPHER_DIR") or DEFAULT_CYPHER_DIR)
        self.dialect = dialect
        if not self.root.is_dir():
            raise StoreError(f"Cypher folder {self.root} does not exist (the kgrag wheel carries it as kgrag/cypher)")
        if dialect is not None and not _NAME.match(dialect):
            raise StoreError(f"Cypher dialect {dialect!r} is not a valid name")
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()

    def path(self, name: str) -> Path:
        """The file a name resolves to: the dialect's override when there is one."""
        if not isinstance(name, str) or not _NAME.match(name):
            raise StoreError(f"Cypher statement name {name!r} is not valid (lowercase letters, digits, _)")
        if self.dialect:
            override = self.root / self.dialect / f"{name}.cypher"
            if override.is_file():
                return override
        path = self.root / f"{name}.cypher"
        if not path.is_file():
            raise StoreError(f"no Cypher statement named {name!r} (looked for {path})")
        return path

    def text(self, name: str) -> str:
        """The file's text without full-line ``//`` comments (one statement per file)."""
        with self._lock:
            cached = self._cache.get(name)
        if cached is not None:
            return cached
        text = _strip_comments(self.path(name).read_text(encoding="utf-8"))
        with self._lock:
            self._cache[name] = text
        return text

    def statement(self, name: str) -> str:
        text = self.text(name)
        if not text:
            raise StoreError(f"Cypher file for {name!r} ({self.path(name)}) holds no statement")
        return text

    def script(self, name: str) -> list[str]:
        """Several statements, each ended by ``;`` at the end of a line (schema files). An
        empty list is valid: a dialect override that states a feature is unavailable."""
        parts = re.split(r";[ \t]*(?:\n|$)", self.text(name))
        return [p.strip() for p in parts if p.strip()]


def _strip_comments(text: str) -> str:
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
    return "\n".join(lines).strip()
