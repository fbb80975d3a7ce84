"""What a supervisor asks a worker: ``GET /health``, ``GET /ready`` (and ``/metrics``) on the metrics port.

- ``/health``: 200 while every agent runs and the broker answered a metadata request within
  ``broker_bound`` seconds; else 503 with a JSON reason. A worker that stops on a fault exits instead
  (``DedupApp.fatal``), so "unhealthy" here means stuck, not crashed.
- ``/ready``: 200 once the worker is assigned, its tables are recovered, it is consuming (the same
  state as the ``READY`` file in the data dir) and the broker answered within ``ready_bound``
  seconds; else 503 with the reasons (never an empty list).

The port binds to 127.0.0.1 unless ``metrics_host`` says otherwise; with ``metrics_token`` set every
request needs ``Authorization: Bearer <token>`` (401 without it).
"""

from __future__ import annotations

import errno
import hmac
import json
import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from stream.errors import UsageError

log = logging.getLogger("dedup.health")
AGENTS = ("documents", "probe", "gather")


class Health:
    """The worker's health: agents running, broker reachable, ready."""

    def __init__(self, ping: Callable[[float], None], interval: float = 5.0, broker_bound: float = 20.0,
                 ready_bound: float = 12.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ping, self.interval, self.broker_bound, self.clock = ping, interval, broker_bound, clock
        # ready turns 503 sooner than health: a load balancer should stop counting on a worker that
        # lost its broker well before a supervisor restarts it
        self.ready_bound = ready_bound
        self.agents: dict[str, bool] = dict.fromkeys(AGENTS, False)
        self.ready = False
        self.not_ready_because = "starting: waiting for the consumer group to assign partitions"
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

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """``status`` plus why the worker is not ready: never 503 with no reason."""
        _, body = self.status()
        reasons = list(body["reasons"])
        if not self.ready:
            reasons.insert(0, self.not_ready_because)
        silent = body["broker_answered_s_ago"]
        if silent > self.ready_bound and not any(r.startswith("broker unreachable") for r in reasons):
            reasons.append(f"broker has not answered for {silent:.0f} s ({self.broker_error or 'no answer yet'})")
        ready = not reasons
        return ready, {**body, "ready": ready, "reasons": reasons}

    def set_ready(self, ready: bool, because: str = "") -> None:
        from stream.service.metrics import READY

        self.ready = ready
        READY.set(1 if ready else 0)
        if not ready:
            self.not_ready_because = because or "not ready"

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


class HealthServer(ThreadingHTTPServer):
    # http.server listens with a backlog of 5: the sixth client of a burst (a scraper and health checks at
    # once) waits for its SYN retry, a second later
    request_queue_size = 128


def serve(health: Health, host: str, port: int, token: str | None = None) -> ThreadingHTTPServer:
    """``/health``, ``/ready`` and ``/metrics`` (Prometheus) on ``host:port``, in a daemon thread; with
    ``token``, only for requests that carry it as a bearer token. A port in use is a ``UsageError``."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    expected = f"Bearer {token}".encode() if token else None

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if expected is not None and not hmac.compare_digest(
                    self.headers.get("Authorization", "").encode(), expected):
                self._send(401, b'{"error": "missing or wrong bearer token (metrics_token)"}', "application/json",
                           {"WWW-Authenticate": "Bearer"})
                return
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, generate_latest(), CONTENT_TYPE_LATEST)
            elif path == "/health":
                healthy, body = health.status()
                self._send(200 if healthy else 503, json.dumps(body).encode(), "application/json")
            elif path == "/ready":
                ready, body = health.readiness()
                self._send(200 if ready else 503, json.dumps(body).encode(), "application/json")
            else:
                self._send(404, b'{"error": "not found: try /health, /ready or /metrics"}', "application/json")

        def _send(self, code: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
            try:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client went away (a scraper's timeout): nothing to answer, nothing to log

        def log_message(self, format: str, *args: Any) -> None:
            """Probes come every few seconds: no access log."""

    try:
        server = HealthServer((host, port), Handler)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"metrics port {host}:{port} is already in use (pick another --metrics-port / "
                             "DEDUP_METRICS_PORT)") from None
        raise UsageError(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc} (--metrics-host / "
                         "DEDUP_METRICS_HOST)") from None
    if token is None and host not in ("127.0.0.1", "::1", "localhost"):
        log.warning("/metrics, /health and /ready on %s:%d answer anyone who reaches that address: set "
                    "metrics_token (DEDUP_METRICS_TOKEN) to require a bearer token", host, port)
    threading.Thread(target=server.serve_forever, name="dedup-http", daemon=True).start()
    return server
