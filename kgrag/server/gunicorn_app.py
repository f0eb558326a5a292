"""Production serving: gunicorn's arbiter (process supervision, signals) with one worker process
whose HTTP front is ``kgrag.server.front``: an asyncio server that reads every request whole
under deadlines without a thread, then runs the Flask app in a thread of the request's lane.
One worker: every request shares one loaded model set (the models are the memory; a second
worker would double it).

gunicorn's control socket (``~/.gunicorn/gunicorn.ctl`` by default, shared by every server of
the user: they deleted each other's, and it could add workers) is off.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.workers.base import Worker

from kgrag.config import ServerSettings, Settings
from kgrag.server.front import Front, Lane, Limits

# /healthz and /readyz: never behind questions or admin work.
PROBE_LANE = Lane(threads=2, queue=32)
GRACE_S = 30.0  # a stopping server lets requests in progress finish this long


def front_limits(server: ServerSettings) -> Limits:
    return Limits(header_timeout_s=server.header_timeout_s, request_timeout_s=server.request_timeout_s,
                  send_timeout_s=server.send_timeout_s, keepalive_s=server.keepalive_s,
                  max_body_bytes=server.max_request_bytes, max_connections=server.max_connections)


def front_lanes(server: ServerSettings) -> dict[str, Lane]:
    return {"probes": PROBE_LANE,
            "reads": Lane(threads=server.threads, queue=server.queue, busy_status=503),
            "admin": Lane(threads=server.admin_threads, queue=server.admin_queue, busy_status=429,
                          retry_after_s=5)}


def build_front(app: Any, settings: Settings) -> Front:
    from kgrag.server.app import lane_of

    return Front(app, front_limits(settings.server), front_lanes(settings.server), lane_of(app))


class FrontWorker(Worker):
    """A gunicorn worker that serves through ``kgrag.server.front`` (set ``kgrag_settings``)."""

    kgrag_settings: Settings

    def run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve())
        finally:
            loop.close()

    async def _serve(self) -> None:
        front = build_front(self.wsgi, self.kgrag_settings)
        servers = await front.start([s.sock for s in self.sockets])
        try:
            while self.alive:
                self.notify()  # the arbiter's heartbeat: the loop is alive
                if self.ppid != os.getppid():
                    self.log.info("parent changed, shutting down: %s", self)
                    break
                await asyncio.sleep(0.5)
        finally:
            await front.stop(servers, grace_s=min(GRACE_S, float(self.cfg.graceful_timeout)))


def worker_class(settings: Settings) -> type[FrontWorker]:
    return type("FrontWorker", (FrontWorker,), {"kgrag_settings": settings})


class KgragGunicorn(BaseApplication):
    def __init__(self, settings: Settings, timeout_s: int = 120,
                 load: Callable[[], Any] | None = None):
        """``load``: the WSGI app to serve (default: kgrag's, built in the worker)."""
        self.settings = settings
        self._load = load
        self.options: dict[str, Any] = {
            "bind": f"{settings.server.host}:{settings.server.port}",
            "workers": 1,
            "worker_class": worker_class(settings),
            # The arbiter restarts a worker whose event loop stops answering this long.
            "timeout": timeout_s,
            # The app writes one JSON line per request (kgrag/server/request_log.py).
            "accesslog": None,
            "control_socket_disable": True,
            # The worker loads the app itself (models, SQLite connections, threads): nothing
            # that does not survive a fork is created before one. Requests wait in the listen
            # queue until it is ready; /readyz says when.
            "preload_app": False,
        }
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self):
        if self._load is not None:
            return self._load()
        from kgrag.server.app import create_app

        return create_app(self.settings)
