"""Prometheus metrics, one registry per app (several apps in one test process never clash).

Besides the request, stage and abstention metrics, the registry carries the process metrics
(``process_*``: CPU seconds, resident memory, open file descriptors, start time), Python's
``python_info`` and garbage-collector counts.
"""

from __future__ import annotations

import time

from flask import Flask, Response, g, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

STAGE_BUCKETS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
# Label values come from these sets only: a client inventing HTTP methods (5,000 of them made
# 5,000 series, 42 KB → 976 KB of /metrics) or paths must not grow the registry.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def method_label(method: str) -> str:
    return method if method in KNOWN_METHODS else "other"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.requests = Counter(
            "kgrag_http_requests", "HTTP requests", ["route", "method", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "kgrag_http_request_seconds", "HTTP request latency", ["route"], registry=self.registry
        )
        self.stages = Histogram(
            "kgrag_retrieval_stage_ms", "Retrieval stage latency (ms)", ["stage"],
            buckets=STAGE_BUCKETS_MS, registry=self.registry,
        )
        self.abstentions = Counter("kgrag_abstentions", "Answers that abstained", registry=self.registry)

    def observe_stages(self, timings_ms: dict[str, float]) -> None:
        for stage, ms in timings_ms.items():
            self.stages.labels(stage).observe(ms)

    def install(self, app: Flask) -> None:
        @app.before_request
        def _start():
            g.kgrag_t0 = time.perf_counter()

        @app.after_request
        def _count(response):
            route = request.url_rule.rule if request.url_rule else "unmatched"
            # route: a URL rule of the app or "unmatched"; status: werkzeug's fixed set
            self.requests.labels(route, method_label(request.method), str(response.status_code)).inc()
            if hasattr(g, "kgrag_t0"):
                self.latency.labels(route).observe(time.perf_counter() - g.kgrag_t0)
            return response

        @app.get("/metrics")
        def metrics():
            # CONTENT_TYPE_LATEST already names its charset: given as ``mimetype`` Flask would
            # append a second one.
            return Response(generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})
