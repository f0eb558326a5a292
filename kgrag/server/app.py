"""Flask app factory. One Components (stores + loaded models) per process, shared by every
request thread; gunicorn serves it with threads (``kgrag serve``)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import IO, cast

from flask import Flask, Response, request
from flask.json.provider import DefaultJSONProvider

from kgrag import heap
from kgrag.asking import Asking
from kgrag.components import Components
from kgrag.config import Settings
from kgrag.conversations import ConversationStore
from kgrag.server import openapi, routing
from kgrag.server.errors import allowed_methods, register_error_handlers
from kgrag.server.jobs import Jobs
from kgrag.server.metrics import Metrics
from kgrag.server.request_log import RequestLog
from kgrag.server.routes import aliases, documents, entities, feedback, health, jobs, query, reranker
from kgrag.stores.consistency import HealthCheck, readiness_problems, recover

log = logging.getLogger(__name__)


class KgragFlask(Flask):
    def make_default_options_response(self) -> Response:
        """OPTIONS answers the methods of the route the path names (``allowed_methods``)."""
        response = self.response_class()
        response.allow.update(allowed_methods(self, request.path))
        return response


def create_app(settings: Settings, components: Components | None = None, *, warm: bool = True,
               log_stream: IO[str] | None = None) -> Flask:
    """``components``: share already-loaded models (tests). ``warm``: load the models now, so
    the first question does not pay for them and ``/readyz`` means ready. ``log_stream``: where
    the JSON request log goes (default stderr)."""
    app = KgragFlask(__name__, static_folder="static", static_url_path="/static")
    cast(DefaultJSONProvider, app.json).ensure_ascii = False  # Chinese stays readable in responses
    app.config["MAX_CONTENT_LENGTH"] = settings.server.max_request_bytes
    app.config["KGRAG_SETTINGS"] = settings
    app.config["KGRAG_COMPONENTS"] = components = components or Components(settings)
    # The seam the query routes ask through, with this app's conversation store (its settings'
    # data dir and TTL: tests share one Components between apps).
    app.config["KGRAG_ASKING"] = Asking(components, ConversationStore.on_demand(settings))
    metrics = Metrics()
    app.config["KGRAG_METRICS"] = metrics
    routing.install(app)
    app.config["KGRAG_JOBS"] = Jobs()
    register_error_handlers(app)
    RequestLog(log_stream).install(app)
    metrics.install(app)
    for bp in (health.bp, query.bp, documents.bp, entities.bp, aliases.bp, feedback.bp, jobs.bp, reranker.bp):
        app.register_blueprint(bp)
    openapi.install(app)
    if removed := documents.remove_staged_uploads(settings.data_dir):
        log.warning("removed %d staging folders of uploads a stopped server left", removed)
    if warm:
        warm_up(app)
    return app


# Probes answer from their own lane (kgrag.server.front): never behind questions or imports.
PROBES = frozenset({"/healthz", "/readyz"})
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def lane_of(app: Flask) -> Callable[[str, str], str]:
    """Which lane of the HTTP front runs a request: "probes" (liveness, readiness), "admin"
    (a change through an admin route: uploads, deletes, alias changes, imports) or "reads"
    (everything else: questions, lookups, the page, admin reads such as a job's progress)."""
    urls = app.url_map.bind("localhost")

    def lane(method: str, path: str) -> str:
        if path in PROBES:
            return "probes"
        if method in _READ_METHODS:
            return "reads"
        try:
            endpoint, _ = urls.match(path, method=method)
        except Exception:  # noqa: BLE001 - not found, wrong method, a redirect: the app answers it
            return "reads"
        view = app.view_functions.get(endpoint)
        return "admin" if getattr(view, "kgrag_admin", False) else "reads"

    return lane


def warm_up(app: Flask) -> None:
    components = app.config["KGRAG_COMPONENTS"]
    recover_stores(components)
    started = time.perf_counter()
    # The stores' integrity check (SQLite's quick_check on a connection of its own: C code
    # outside the GIL, 8.5 s at 100k passages when the files changed since the last one) runs
    # beside the model loading (~8 s) and the first retrieval. The other reads run after it:
    # beside the imports they only slowed both (100k passages, start to ready: 14.1 s with
    # every read in the thread, 11.3 s without).
    integrity = threading.Thread(target=check_integrity, args=(components,), name="kgrag-integrity", daemon=True)
    integrity.start()
    try:
        # One real retrieval loads the embedder (and reranker), jieba's dictionary, the dense
        # matrix and the entity graph: measured, a cold first question took 1.3 s.
        components.retriever.retrieve("What is kgrag?", top_k=1)
        components.generator  # noqa: B018 - builds the answerer once
    except Exception:  # noqa: BLE001 - a damaged store must not stop the server from saying so
        log.exception("warming up failed: /readyz names what is wrong")
        integrity.join()
        return
    models_s = time.perf_counter() - started
    integrity.join()
    prime_stores(components)
    warn_stale(components)
    # Loaded models and caches live as long as the process: out of the collector's sight.
    heap.settle()
    app.config["KGRAG_WARM"] = True
    log.info("ready in %.1f s (models and a first retrieval %.1f s)", time.perf_counter() - started, models_s)


def warn_stale(components: Components) -> None:
    """Log the documents stored by another ingestion revision or settings (an upgrade that
    stores something new, a changed chunk size): they are answered from as they were built
    until their sources are ingested again."""
    try:
        stale = components.stale_documents()
    except Exception:  # noqa: BLE001 - /readyz says what is wrong with a store when asked
        log.exception("reading the documents' ingestion revisions failed")
        return
    if stale:
        log.warning("%d documents were built by another ingestion revision or settings (e.g. %s): ingest "
                    "their sources again to rebuild them", len(stale), stale[0])


def check_integrity(components: Components) -> None:
    """Each store's own soundness check, its verdict kept for ``/readyz`` (see
    ``SqliteDatabase.problems``)."""
    try:
        for store in (components.chunk_index, components.graph):
            if isinstance(store, HealthCheck):
                store.problems()
    except Exception:  # noqa: BLE001 - /readyz says what is wrong when asked
        log.exception("checking the stores at start failed")


def prime_stores(components: Components) -> None:
    """What ``/readyz`` and the first questions read from the stores, read now: whether the
    stores agree, their counts (kept until a file changes), the entity graph (from its
    snapshot, or by reading every relation) and the dense matrix. A failure is logged:
    ``/readyz`` says what is wrong when asked."""
    steps: dict[str, Callable[[], object]] = {
        "integrity and agreement": lambda: readiness_problems(components.journal, components.chunk_index,
                                                              components.graph),
        "counts": lambda: (components.graph.stats(relations=False), components.chunk_index.count(searchable_only=True)),
        "entity graph": components.graph.prepare_reads,
        "dense matrix": components.chunk_index.prepare_reads,
    }
    took = []
    try:
        for name, step in steps.items():
            step_started = time.perf_counter()
            step()
            took.append(f"{name} {time.perf_counter() - step_started:.1f} s")
        log.info("stores read at start: %s", ", ".join(took))
    except Exception:  # noqa: BLE001 - a broken store must not stop the server from saying so
        log.exception("reading the stores at start failed")


def recover_stores(components: Components) -> None:
    """At start: finish or discard the writes a crashed ingest left (the journal's recovery).
    Nothing else is changed: a server never deletes data on its own (a graph file removed by
    mistake would otherwise cost every chunk at the next start); other disagreements are named
    by ``/readyz`` until an ingest or ``kgrag check --repair`` settles them. A failure here is
    logged: the server still starts and ``/readyz`` says what is wrong."""
    try:
        with components.journal.writing():
            plan = recover(components.journal, components.chunk_index, components.graph)
    except Exception:  # noqa: BLE001 - a broken store must not stop the server from saying so
        log.exception("store recovery at start failed")
        return
    if plan.roll_forward or plan.discard:
        log.warning("finished %d and discarded %d unfinished writes at start",
                    len(plan.roll_forward), len(plan.discard))
