"""Load on a real server: N clients × M ``POST /v1/query`` on 127.0.0.1, bounded in count and
time; prints errors, latency p50/p95/p99, throughput and the server's resident memory.

    .venv/bin/kgrag --data-dir /tmp/kg-demo ingest kgrag/demo/corpus --glossary kgrag/demo/glossary.csv
    .venv/bin/python benchmarks/load.py --data-dir /tmp/kg-demo --clients 32 --queries 50

The server is ``kgrag serve`` (gunicorn, default 8 threads) started on a free loopback port over
``--data-dir``; or ``--url`` names one already running, which must be on 127.0.0.1 (this
script never loads another host). Every client sends its queries back to back (a closed loop:
throughput is what the server sustains, latency includes queueing for a worker thread). The
run stops at ``--max-seconds`` whatever is left; a request has ``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live import Server, post_json  # noqa: E402

QUESTIONS = [
    "What is the lowest common ancestor of two nodes in a tree?",
    "最近公共祖先怎么求？",
    "How does binary lifting answer LCA queries?",
    "管理员角色有哪些权限？",
    "Who can grant permissions to a new user?",
    "What is a binary heap?",
    "Tarjan 离线算法是什么？",
    "How is the depth of a node defined?",
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def slow_body_client(url: str, interval: float, stop: threading.Event, cut_after: list[float]) -> None:
    """Again and again until ``stop``: a POST announcing ``Content-Length: 1000`` that then sends one
    byte every ``interval`` seconds, until the server ends the connection (when is recorded)."""
    parts = urllib.parse.urlsplit(url)
    head = (f"POST /v1/query HTTP/1.1\r\nHost: {parts.hostname}\r\nContent-Type: application/json\r\n"
            "Content-Length: 1000\r\n\r\n").encode()
    while not stop.is_set():
        started = time.monotonic()
        try:
            with socket.create_connection((parts.hostname, parts.port), timeout=5) as sock:
                sock.sendall(head)
                sock.settimeout(interval)
                while not stop.is_set():
                    try:
                        if not sock.recv(4096):  # the server ended it
                            break
                    except TimeoutError:
                        sock.sendall(b" ")
        except OSError:
            pass
        if not stop.is_set():
            cut_after.append(time.monotonic() - started)


def healthz_probe(url: str, stop: threading.Event, every_s: float, latencies: list[float], errors: dict) -> None:
    while not stop.wait(every_s):
        t = time.perf_counter()
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=30) as resp:
                resp.read()
            latencies.append(time.perf_counter() - t)
        except Exception as exc:  # noqa: BLE001 - a failed probe is a figure
            errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1


def run_load(url: str, clients: int, queries: int, max_seconds: float, timeout: float,
             server: Server | None, slow_clients: int = 0, slow_interval: float = 5.0) -> dict:
    latencies: list[float] = []
    errors: dict[str, int] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + max_seconds
    rss_before = server.rss_mb() if server else 0.0
    rss_peak = [rss_before]
    start = threading.Barrier(clients + 1)

    def client(index: int) -> None:
        start.wait()
        for i in range(queries):
            if time.monotonic() >= deadline:
                with lock:
                    errors["not sent (time bound)"] = errors.get("not sent (time bound)", 0) + queries - i
                return
            question = QUESTIONS[(index + i) % len(QUESTIONS)]
            t = time.perf_counter()
            try:
                status, _ = post_json(f"{url}/v1/query", {"question": question}, timeout)
                outcome = None if status == 200 else f"HTTP {status}"
            except Exception as exc:  # noqa: BLE001 - a failed request is a figure, not a crash
                outcome = type(exc).__name__
            elapsed = time.perf_counter() - t
            with lock:
                if outcome is None:
                    latencies.append(elapsed)
                else:
                    errors[outcome] = errors.get(outcome, 0) + 1

    def sample_rss(stop: threading.Event) -> None:
        while not stop.wait(0.5):
            rss_peak[0] = max(rss_peak[0], server.rss_mb() if server else 0.0)

    stop = threading.Event()
    cut_after: list[float] = []
    slow = [threading.Thread(target=slow_body_client, args=(url, slow_interval, stop, cut_after), daemon=True)
            for _ in range(slow_clients)]
    for th in slow:
        th.start()
    health: list[float] = []
    health_errors: dict[str, int] = {}
    prober = threading.Thread(target=healthz_probe, args=(url, stop, 0.25, health, health_errors), daemon=True)
    if slow_clients:
        time.sleep(min(2.0, slow_interval))  # every slow client is connected and sending
    prober.start()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for th in threads:
        th.start()
    sampler = threading.Thread(target=sample_rss, args=(stop,), daemon=True)
    sampler.start()
    start.wait()
    began = time.perf_counter()
    for th in threads:
        th.join()
    wall = time.perf_counter() - began
    stop.set()
    prober.join(timeout=35)
    ok = len(latencies)
    ms = [x * 1000 for x in latencies]
    return {
        "clients": clients, "queries_per_client": queries, "ok": ok, "errors": errors,
        "wall_s": round(wall, 2), "throughput_rps": round(ok / wall, 1) if wall else 0.0,
        "latency_ms": {"p50": round(percentile(ms, 50)), "p95": round(percentile(ms, 95)),
                       "p99": round(percentile(ms, 99)), "mean": round(statistics.fmean(ms))} if ms else {},
        "server_rss_mb": {"before": round(rss_before, 1), "peak": round(rss_peak[0], 1)} if server else None,
        "healthz_ms": ({"n": len(health), "p50": round(percentile(health, 50) * 1000), "p95": round(percentile(health, 95) * 1000),
                        "max": round(max(health) * 1000), "errors": health_errors} if health else {"errors": health_errors}),
        "slow_clients": ({"clients": slow_clients, "interval_s": slow_interval, "cut": len(cut_after),
                          "cut_after_s_median": round(statistics.median(cut_after), 1) if cut_after else None}
                         if slow_clients else None),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, help="knowledge base to serve (starts kgrag serve)")
    ap.add_argument("--url", help="a server already running on 127.0.0.1 instead")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--queries", type=int, default=50, help="per client")
    ap.add_argument("--max-seconds", type=float, default=300.0)
    ap.add_argument("--timeout", type=float, default=60.0, help="per request")
    ap.add_argument("--threads", type=int, help="server request threads (kgrag serve --threads)")
    ap.add_argument("--slow-clients", type=int, default=0,
                    help="meanwhile, this many connections that announce a 1000-byte body and send a byte every "
                         "--slow-interval seconds (reconnecting when cut)")
    ap.add_argument("--slow-interval", type=float, default=5.0)
    args = ap.parse_args()
    if not 1 <= args.clients <= 256 or not 1 <= args.queries <= 10_000 or not 0 <= args.slow_clients <= 256:
        ap.error("--clients must be 1..256, --queries 1..10000 and --slow-clients 0..256")
    if args.url:
        if urllib.parse.urlsplit(args.url).hostname not in ("127.0.0.1", "localhost", "::1"):
            ap.error("--url must be a loopback address")
        print(json.dumps(run_load(args.url.rstrip("/"), args.clients, args.queries, args.max_seconds,
                                  args.timeout, None, args.slow_clients, args.slow_interval), ensure_ascii=False))
        return
    if args.data_dir is None:
        ap.error("give --data-dir (a knowledge base) or --url")
    with Server(args.data_dir, threads=args.threads) as server:
        result = run_load(server.url, args.clients, args.queries, args.max_seconds, args.timeout, server,
                          args.slow_clients, args.slow_interval)
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
