"""A broker outage is ridden out in-process up to ``task_timeout``, and only past it the worker exits 75:
a real tansu SIGSTOPped under load (its own broker: the session's one stays up for the other tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stream.service.runtime.embedded import EmbeddedBroker
from tests.harness import Deployment, Row, VerdictWatch, rows

pytestmark = pytest.mark.integration


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[Deployment]:
    with EmbeddedBroker(log_path=tmp_path / "tansu.log") as broker, Deployment.running(broker, tmp_path) as d:
        yield d


def _paused(d: Deployment, seconds: float, worker: subprocess.Popen[bytes]) -> float | None:
    """SIGSTOP the broker for ``seconds`` (less if the worker exits meanwhile); the worker's exit time."""
    os.kill(d.broker.proc.pid, signal.SIGSTOP)
    started = time.monotonic()
    try:
        while time.monotonic() - started < seconds:
            if worker.poll() is not None:
                return time.monotonic() - started
            time.sleep(0.5)
    finally:
        os.kill(d.broker.proc.pid, signal.SIGCONT)
    return None


def test_an_outage_within_task_timeout_is_ridden_out(own_broker: Deployment, corpus: list[dict[str, Any]],
                                                     expected: dict[str, Row]) -> None:
    d = own_broker
    data = d.tmp / "w"
    worker = d.start_worker("w", data=data, env={"DEDUP_TASK_TIMEOUT": "2m", "DEDUP_BATCH_SIZE": "16"})
    d.wait_ready(data)
    watch = VerdictWatch(d)
    deadline = time.monotonic() + 30
    while not watch.consumer.assignment() and time.monotonic() < deadline:
        watch.count()  # connected before the documents go out: the pause starts as the first verdicts come
    cut = len(corpus) * 3 // 4
    d.publish(corpus[:cut])
    watch.wait_for(len(corpus) // 8, 120)
    exited_after = _paused(d, 45, worker)  # longer than the 30 s a worker once gave its output
    resumed, at_resume = time.monotonic(), watch.count()
    assert exited_after is None, f"worker exited {worker.returncode} after {exited_after:.0f} s\n{d.log_digest()}"
    # the rest after the outage: a worker judges 400 documents in ~3 s, so the first part may be done
    # before the pause began (the full suite once saw 400/401 at SIGCONT); these ones are still to judge
    d.publish(corpus[cut:])
    watch.wait_for(at_resume + 1, 30)  # the first new verdict within 30 s of SIGCONT
    first_after = time.monotonic() - resumed
    watch.close()
    table = d.final_table(len(corpus), timeout=180)
    assert rows(table) == expected
    assert worker.poll() is None and first_after < 30
    assert d.outcomes()["unaccounted"] == 0


def test_past_task_timeout_the_worker_exits_75(own_broker: Deployment, corpus: list[dict[str, Any]]) -> None:
    d = own_broker
    data = d.tmp / "w"
    worker = d.start_worker("w", data=data, env={"DEDUP_TASK_TIMEOUT": "8s", "DEDUP_BATCH_SIZE": "16"})
    worker.may_fail = True  # type: ignore[attr-defined]
    d.wait_ready(data)
    d.publish(corpus * 3)  # copies of every id: a backlog that keeps it producing
    watch = VerdictWatch(d)
    watch.wait_for(20, 120)
    watch.close()
    exited_after = _paused(d, 60, worker)
    assert exited_after is not None and worker.returncode == 75, (worker.returncode, d.log_digest())
    assert 8 <= exited_after <= 45, exited_after
    assert "Message timed out" in (d.tmp / "w.log").read_text(errors="replace")  # librdkafka gave up after 8 s
