"""The restart gate of docker-compose.yml's workers: 75 and 4 pass through (Docker restarts), other
failures become a stop with one line, signals reach the worker (a real child process)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.integration  # starts processes of its own (see pyproject.toml)


def _gate(*command: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "stream.service.runtime.restart_gate", *command],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize(("code", "passed"), [(75, 75), (4, 4), (0, 0), (3, 0), (70, 0), (2, 0)])
def test_only_codes_a_restart_can_help_reach_the_restart_policy(code: int, passed: int) -> None:
    gate = _gate(sys.executable, "-c", f"raise SystemExit({code})")
    _, err = gate.communicate(timeout=30)
    assert gate.returncode == passed
    if code not in (0, 4, 75):
        assert f"exited {code}: not restarted" in err and len(err.strip().splitlines()) == 1


def test_sigterm_reaches_the_worker_which_stops_cleanly() -> None:
    child = ("import signal, sys, time\n"
             "signal.signal(signal.SIGTERM, lambda *a: (print('clean stop', flush=True), sys.exit(0)))\n"
             "print('up', flush=True)\n"
             "time.sleep(60)\n")
    gate = _gate(sys.executable, "-c", child)
    assert gate.stdout is not None and gate.stdout.readline().strip() == "up"
    t0 = time.monotonic()
    gate.send_signal(signal.SIGTERM)
    out, _ = gate.communicate(timeout=30)
    assert gate.returncode == 0 and "clean stop" in out and time.monotonic() - t0 < 10
