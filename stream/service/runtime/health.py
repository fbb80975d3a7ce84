"""What a supervisor asks a worker: ``GET /health``, ``GET /ready`` (and ``/metrics``) on the metrics port.

- ``/health``: 200 while every agent runs and the broker answered a metadata request within
  ``broker_bound`` seconds; else 503 with a JSON reason. A worker that stops on a fault exits instead
  (``DedupApp.fatal``), so "unhealthy" here means stuck, not crashed.
- ``/ready``: 200 once the worker is assigned, its tables are recovered and it is consuming (the same
  state as the ``READY`` file in the data dir); else 503.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger("dedup.health")
AGENTS = ("documents", "probe", "gather")


class Health:
    """The worker's health: agents running, broker reachable, ready."""

    def __init__(self, ping: Callable[[float], None], interval: float = 5.0, broker_bound: float = 20.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ping, self.interval, self.broker_bound, self.clock = ping, interval, broker_bound, clock
        self.agents: dict[str, bool] = dict.fromkeys(AGENTS, False)
        self.ready = False
        self.broker_ok_at = clock()
        self.broker_error = ""
        self._stop = threading.Event()

    def status(self) -> tuple[bool, dict[str, Any]]:
        down = [name for name, running in self.agents.items() if not running]
        silent = self.clock() - self.broker_ok_at
        reasons = [f"agent {name} is not running" for name in down]
        if silent > self.broker_bound:
            reasons.append(f"broker unreachable for {silent:.0f} s ({self.broker_error})")
        return not reasons, {"healthy": not reasons, "ready": self.ready, "reasons": reasons,
                             "broker_answered_s_ago": round(silent, 1)}

    def watch_broker(self) -> None:
        """Ping the broker every ``interval`` seconds in a thread (until ``stop``)."""
        def loop() -> None:
            while not self._stop.wait(self.interval):
                try:
                    self.ping(self.interval)
                except Exception as exc:
                    self.broker_error = str(exc)[:200]
                else:
                    self.broker_ok_at = self.clock()

        threading.Thread(target=loop, name="dedup-health", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()


def serve(health: Health, host: str, port: int) -> ThreadingHTTPServer:
    """``/health``, ``/ready`` and ``/metrics`` (Prometheus) on ``host:port``, in a daemon thread."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, generate_latest(), CONTENT_TYPE_LATEST)
                return
            healthy, body = health.status()
            if path == "/health":
                self._send(200 if healthy else 503, json.dumps(body).encode(), "application/json")
            elif path == "/ready":
                ready = health.ready and healthy
                self._send(200 if ready else 503, json.dumps({**body, "ready": ready}).encode(), "application/json")
            else:
                self._send(404, b'{"error": "not found: try /health, /ready or /metrics"}', "application/json")

        def _send(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Probes come every few seconds: no access log."""

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, name="dedup-http", daemon=True).start()
    return server
