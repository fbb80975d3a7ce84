"""The worker's health endpoints: /ready says why it is not ready, a token guards the port, a busy
port is a usage error, a client that leaves early is no traceback; a stopped process is not ready."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from stream.errors import UsageError
from stream.service.runtime.app import READY_FILE, process_state, ready_pid
from stream.service.runtime.health import Health, serve
from tests.harness import listen_port


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _health(clock: Clock) -> Health:
    health = Health(lambda _t: None, clock=clock)
    health.agents = dict.fromkeys(health.agents, True)
    return health


def test_not_ready_always_comes_with_a_reason() -> None:
    clock = Clock()
    health = _health(clock)
    ready, body = health.readiness()
    assert not ready and body["reasons"] and body["reasons"][0].startswith("starting")
    health.set_ready(True)
    assert health.readiness() == (True, {**health.status()[1], "ready": True, "reasons": []})
    health.set_ready(False, "rebalancing: partitions are being reassigned")
    ready, body = health.readiness()
    assert not ready and body["reasons"] == ["rebalancing: partitions are being reassigned"]


def test_ready_turns_503_when_the_broker_stops_answering_before_health_does() -> None:
    clock = Clock()
    health = _health(clock)
    health.set_ready(True)
    health.broker_error = "Failed to get metadata: Local: Broker transport failure"
    clock.now += 15  # past ready_bound (12 s), within broker_bound (20 s)
    assert health.status()[0]
    ready, body = health.readiness()
    assert not ready and "broker has not answered for 15 s" in body["reasons"][0]
    assert "transport failure" in body["reasons"][0]
    clock.now += 10
    healthy, body = health.status()
    assert not healthy and body["reasons"] == [f"broker unreachable for 25 s ({health.broker_error})"]
    assert len(health.readiness()[1]["reasons"]) == 1  # one broker reason, not two


def _get(url: str, token: str | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_a_token_guards_every_endpoint() -> None:
    clock = Clock()
    health = _health(clock)
    health.set_ready(True)
    port = listen_port()
    server = serve(health, "127.0.0.1", port, token="s3cret")
    try:
        for path in ("/metrics", "/health", "/ready"):
            assert _get(f"http://127.0.0.1:{port}{path}")[0] == 401
            assert _get(f"http://127.0.0.1:{port}{path}", token="wrong")[0] == 401
            assert _get(f"http://127.0.0.1:{port}{path}", token="s3cret")[0] == 200
        _, body = _get(f"http://127.0.0.1:{port}/ready", token="s3cret")
        assert json.loads(body)["ready"] is True
    finally:
        server.shutdown()
        server.server_close()


def test_a_busy_port_is_a_usage_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=f"metrics port 127.0.0.1:{port} is already in use"):
            serve(_health(Clock()), "127.0.0.1", port)


def test_a_scraper_that_leaves_early_leaves_no_traceback(capfd: pytest.CaptureFixture[str]) -> None:
    health = _health(Clock())
    port = listen_port()
    server = serve(health, "127.0.0.1", port)
    try:
        slowest = 0.0
        for _ in range(30):  # each client resets the connection right after asking
            started = time.monotonic()
            with socket.create_connection(("127.0.0.1", port)) as client:
                slowest = max(slowest, time.monotonic() - started)
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        # the kernel completes a connection the server has room to queue: none waits for a SYN retry (1 s)
        assert slowest < 0.5
        time.sleep(0.5)
        assert _get(f"http://127.0.0.1:{port}/health")[0] == 200  # still serving
    finally:
        server.shutdown()
        server.server_close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "BrokenPipeError" not in err and "ConnectionResetError" not in err, err


def test_the_ready_file_of_a_stopped_process_does_not_count(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / READY_FILE).write_text(f"{sleeper.pid}\n")
        assert ready_pid(tmp_path) == sleeper.pid
        os.kill(sleeper.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while process_state(sleeper.pid) != "T" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process_state(sleeper.pid) == "T"
        assert ready_pid(tmp_path) is None  # kill(pid, 0) alone says "alive"
        os.kill(sleeper.pid, signal.SIGCONT)
        while process_state(sleeper.pid) == "T" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready_pid(tmp_path) == sleeper.pid
    finally:
        sleeper.kill()
        sleeper.wait()
    assert ready_pid(tmp_path) is None  # gone


def test_lag_gauges_follow_the_assignment() -> None:
    from prometheus_client import generate_latest

    from stream.service import metrics

    metrics.set_lag("documents", {("docs-x", 0): 7, ("docs-x", 1): 0, ("docs-x", 2): -3})
    text = generate_latest().decode()
    assert 'dedup_consumer_lag{partition="0",stage="documents",topic="docs-x"} 7.0' in text
    assert 'dedup_consumer_lag{partition="2",stage="documents",topic="docs-x"} 0.0' in text  # never negative
    metrics.set_lag("documents", {("docs-x", 1): 4})  # partitions 0 and 2 revoked
    text = generate_latest().decode()
    assert 'topic="docs-x"' in text and 'partition="0",stage="documents",topic="docs-x"' not in text
    assert 'dedup_consumer_lag{partition="1",stage="documents",topic="docs-x"} 4.0' in text
    metrics.set_lag("documents", {})
    assert 'topic="docs-x"' not in generate_latest().decode()
