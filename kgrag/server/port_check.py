"""Is the port free? Asked before serving, so that a port in use is one line naming the way out
(``--port``, ``KGRAG_SERVER__PORT``) and exit 2, not gunicorn's five seconds of "Connection in
use" and exit 1.

Standard library only: ``scripts/serve`` runs this file with the system Python before it sets
up the virtualenv (``python3 kgrag/server/port_check.py HOST PORT COMMAND``), and ``kgrag serve``
imports it.
"""

from __future__ import annotations

import errno
import socket
import sys

EXIT_USAGE = 2  # kgrag.cli: bad usage or configuration
_SEARCHED = 50  # ports looked at above the one asked for, to suggest a free one


def _bind_error(host: str, port: int) -> OSError | None:
    """Binding ``host:port`` as gunicorn does (SO_REUSEADDR: a socket in TIME_WAIT is no
    obstacle, a listening one is): None when it works, else the error."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        return e
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as e:
            return e
    return None


def in_use(host: str, port: int) -> bool:
    error = _bind_error(host, port)
    return error is not None and error.errno == errno.EADDRINUSE


def free_port_after(host: str, port: int) -> int | None:
    """The first port above ``port`` that binds, None if none of the next ``_SEARCHED`` does."""
    for candidate in range(port + 1, min(port + 1 + _SEARCHED, 65536)):
        if _bind_error(host, candidate) is None:
            return candidate
    return None


def in_use_message(host: str, port: int, command: str) -> str:
    """"port 8000 is in use; `scripts/serve --port 8001` or KGRAG_SERVER__PORT"."""
    other = free_port_after(host, port) or port + 1
    return f"port {port} is in use; `{command} --port {other}` or KGRAG_SERVER__PORT"


def main(argv: list[str]) -> int:
    """``HOST PORT COMMAND``: exit 2 with the one-line message when the port is in use, else 0."""
    host, port, command = argv[0], int(argv[1]), argv[2]
    if in_use(host, port):
        print(in_use_message(host, port, command), file=sys.stderr)
        return EXIT_USAGE
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
