"""YAML front matter of Markdown files: where ``tags:`` and ``date:`` facets come from
(``kgrag.ingest.record_facets``). The block stays in the text: it is part of what was written."""

from __future__ import annotations

import re
from typing import Any

import yaml

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)---[ \t]*(?:\n|\Z)", re.DOTALL)


def front_matter(text: str) -> dict[str, Any]:
    """The YAML front matter block at the very start of a Markdown text (``---`` lines around
    it) as a mapping; {} when there is none or it is not a YAML mapping (then it is just text)."""
    m = _FRONT_MATTER.match(text)
    if m is None:
        return {}
    try:
        data = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}
