"""A real HTTP server (werkzeug, threaded) on 127.0.0.1 around a Flask app, in this process."""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass


@dataclass
class LiveServer:
    url: str
    app: object
    log: io.StringIO  # the app's JSON request log
    server: object
    thread: threading.Thread

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=10)


def start_server(app, log: io.StringIO) -> LiveServer:
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="kgrag-live-server", daemon=True)
    thread.start()
    return LiveServer(f"http://127.0.0.1:{server.server_port}", app, log, server, thread)
