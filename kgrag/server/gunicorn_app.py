"""Production serving: gunicorn with one worker process and several threads, so every request
shares one loaded model set (the models are the memory; a second worker would double it)."""

from __future__ import annotations

from gunicorn.app.base import BaseApplication

from kgrag.config import Settings


class KgragGunicorn(BaseApplication):
    def __init__(self, settings: Settings, threads: int = 8, timeout_s: int = 120):
        self.settings = settings
        self.options = {
            "bind": f"{settings.server.host}:{settings.server.port}",
            "workers": 1,
            "worker_class": "gthread",
            "threads": threads,
            # generation with a slow LLM can take a while; SSE streams keep the connection
            "timeout": timeout_s,
            # The app writes one JSON line per request (kgrag/server/request_log.py) with the
            # request id and stage timings; gunicorn's plain access line would repeat it.
            "accesslog": None,
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
        from kgrag.server.app import create_app

        return create_app(self.settings)
