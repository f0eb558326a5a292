"""At most ``count`` requests per client in any ``window_s`` seconds (a sliding window), for
routes anyone may call that store what they are sent (``POST /v1/feedback``: 300 posts added
8 MB). A client is its address; behind a reverse proxy every client is the proxy's, so set
the proxy's own limit there. At most ``MAX_CLIENTS`` clients are remembered (the longest idle
forgotten first)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque

MAX_CLIENTS = 10_000


class RateLimit:
    def __init__(self, count: int, window_s: float = 60.0):
        self.count, self.window_s = count, window_s
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def wait_s(self, client: str) -> float:
        """0 when ``client`` may go on now (and counts this request); else the seconds until it may."""
        now = time.monotonic()
        with self._lock:
            times = self._seen.pop(client, None) or deque()
            while times and times[0] <= now - self.window_s:
                times.popleft()
            wait = 0.0 if len(times) < self.count else times[0] + self.window_s - now
            if not wait:
                times.append(now)
            self._seen[client] = times  # most recent last
            while len(self._seen) > MAX_CLIENTS:
                self._seen.popitem(last=False)
            return wait
