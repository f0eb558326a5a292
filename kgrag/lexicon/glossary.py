"""Curated glossaries: canonical names with their aliases, loaded as curated entities.

Read by ingestion (``kgrag ingest --glossary``) and by the alias admin (``kgrag aliases
import``/``export``), so both accept exactly the same files.

Three formats, chosen by file extension:

* ``.csv``: header ``canonical,type,aliases`` (``type`` and ``aliases`` optional columns);
  aliases separated by ``;`` or ``|``.
* ``.yaml`` / ``.yml``: a list of ``{name | canonical, type?, aliases?}`` (aliases a list or a
  ``;``-separated string).
* anything else (``.txt``, ``.glossary``): one entity a line, fields separated by ``;``
  (also ``；`` or ``|``): ``LCA; Lowest Common Ancestor; 最近公共祖先``. The first field is the
  canonical name, the rest are aliases: the writer of the file decides which spelling names the
  entity, and the entity key is ``normalize_alias`` of it ("lca").

Blank lines and lines starting with ``#`` are skipped (CSV and line formats). Two lines naming
the same canonical key are merged (aliases united, the first name and type kept). Errors name
the file and line.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import yaml

from kgrag.errors import InputError
from kgrag.text.normalize import normalize_alias
from kgrag.types import CONCEPT, Entity

_ALIAS_SEPARATORS = re.compile(r"[;；|]")
CSV_ALIAS_SEPARATOR = "|"


class GlossaryError(InputError):
    """A glossary file could not be read; the message names the file and line."""


def _fail(path: Path, line: int | None, reason: str) -> GlossaryError:
    where = f"{path}:{line}" if line else str(path)
    return GlossaryError(f"glossary {where}: {reason}")


def _split_aliases(value: str) -> list[str]:
    return [a.strip() for a in _ALIAS_SEPARATORS.split(value) if a.strip()]


class _Collector:
    """Builds entities in file order, merging repeated canonical keys."""

    def __init__(self, path: Path):
        self.path = path
        self.entities: dict[str, Entity] = {}
        self._seen: dict[str, set[str]] = {}

    def add(self, line: int | None, canonical: str, entity_type: str, aliases: Iterable[str]) -> None:
        canonical = canonical.strip()
        if not canonical:
            raise _fail(self.path, line, "empty canonical name")
        key = normalize_alias(canonical)
        if not key:
            raise _fail(self.path, line, f"canonical name {canonical!r} has no letters or digits")
        entity = self.entities.get(key)
        if entity is None:
            entity = self.entities[key] = Entity(key=key, name=canonical, type=entity_type.strip() or CONCEPT, curated=True)
            self._seen[key] = {key}
        seen = self._seen[key]
        for alias in aliases:
            alias = alias.strip()
            normalized = normalize_alias(alias)
            if normalized and normalized not in seen:
                seen.add(normalized)
                entity.aliases.append(alias)


def _content_lines(text: str) -> Iterable[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            yield number, stripped


def _load_lines(text: str, out: _Collector) -> None:
    for number, line in _content_lines(text):
        canonical, *aliases = _ALIAS_SEPARATORS.split(line)
        if not canonical.strip():
            raise _fail(out.path, number, f"the first field (the canonical name) is empty in {line!r}")
        out.add(number, canonical, CONCEPT, [a for a in aliases if a.strip()])


def _load_csv(text: str, out: _Collector) -> None:
    # Comment and blank lines are blanked rather than removed so csv line numbers stay true.
    kept = "\n".join("" if (not line.strip() or line.lstrip().startswith("#")) else line for line in text.splitlines())
    reader = csv.reader(io.StringIO(kept))
    header: list[str] | None = None
    for row in reader:
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [cell.strip().lower() for cell in row]
            if "canonical" not in header and "name" not in header:
                raise _fail(out.path, reader.line_num, f"CSV header must have a 'canonical' column, got {row}")
            continue
        if len(row) > len(header):
            raise _fail(out.path, reader.line_num, f"{len(row)} fields but the header has {len(header)} (quote aliases containing commas)")
        record = dict(zip(header, (cell.strip() for cell in row)))
        canonical = record.get("canonical") or record.get("name") or ""
        out.add(reader.line_num, canonical, record.get("type", ""), _split_aliases(record.get("aliases", "")))
    if header is None:
        raise _fail(out.path, None, "empty CSV (expected a header canonical,type,aliases)")


def _load_yaml(text: str, out: _Collector) -> None:
    try:
        data = yaml.safe_load(text)
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise _fail(out.path, mark.line + 1 if mark else None, f"invalid YAML: {e}") from e
    if data is None or root is None:  # an empty document: no items, no nodes
        return
    if not isinstance(data, list):
        raise _fail(out.path, 1, "YAML glossary must be a list of {name, type, aliases} mappings")
    for item, node in zip(data, root.value, strict=True):
        line = node.start_mark.line + 1
        if not isinstance(item, dict):
            raise _fail(out.path, line, f"expected a mapping with 'name', got {item!r}")
        canonical = item.get("canonical", item.get("name"))
        if not isinstance(canonical, str):
            raise _fail(out.path, line, "entry needs a 'name' (or 'canonical') string")
        aliases = item.get("aliases") or []
        if isinstance(aliases, str):
            aliases = _split_aliases(aliases)
        if not isinstance(aliases, list) or not all(isinstance(a, (str, int, float)) for a in aliases):
            raise _fail(out.path, line, f"'aliases' must be a list of strings, got {aliases!r}")
        out.add(line, canonical, str(item.get("type") or ""), [str(a) for a in aliases])


def load_glossary(path: str | Path) -> list[Entity]:
    """Curated entities from a glossary file, in file order."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError as e:
        raise _fail(path, None, "file not found") from e
    except UnicodeDecodeError as e:
        raise _fail(path, None, f"not UTF-8 text ({e.reason} at byte {e.start})") from e
    except OSError as e:
        raise _fail(path, None, e.strerror or str(e)) from e
    out = _Collector(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        _load_csv(text, out)
    elif suffix in (".yaml", ".yml"):
        _load_yaml(text, out)
    else:
        _load_lines(text, out)
    return list(out.entities.values())


def write_glossary_csv(entities: Sequence[Entity], path: str | Path) -> None:
    """Write entities as a ``canonical,type,aliases`` CSV that ``load_glossary`` reads back."""
    path = Path(path)
    rows = []
    for entity in entities:
        for alias in entity.aliases:
            if CSV_ALIAS_SEPARATOR in alias or ";" in alias:
                raise GlossaryError(f"alias {alias!r} of {entity.key!r} contains an alias separator; cannot write {path}")
        rows.append([entity.name, entity.type, CSV_ALIAS_SEPARATOR.join(entity.aliases)])
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["canonical", "type", "aliases"])
        writer.writerows(rows)


def glossary_aliases(entities: Iterable[Entity]) -> list[str]:
    """Every name and alias of the given entities: pass as ``Gazetteer(any_case=...)`` so curated
    one-word terms also match when written in lower case."""
    return [name for e in entities for name in (e.name, *e.aliases)]
