"""URL matching for ids that are paths: a document id is a file's path (``guide/setup.md``, or
``/srv/docs/a.md`` for a file ingested by itself), an entity key any text.

Werkzeug's ``path`` converter refuses a first ``/``, and its default ``merge_slashes`` turned
``DELETE /v1/documents//srv/docs/a.md`` into an HTML 308 redirect to ``/v1/documents/srv/docs/a.md``
(then 404). Here ``<path:...>`` takes any non-empty rest of the URL, slashes as sent.
"""

from __future__ import annotations

from flask import Flask
from werkzeug.routing import PathConverter


class AnyPathConverter(PathConverter):
    """``<path:x>``: everything up to the end, a leading or doubled slash included."""

    regex = ".+?"
    part_isolating = False  # it spans "/" (Werkzeug would infer True from a regex without one)


def install(app: Flask) -> None:
    """Before any blueprint: rules take their converter when they are added."""
    app.url_map.merge_slashes = False
    app.url_map.converters["path"] = AnyPathConverter
