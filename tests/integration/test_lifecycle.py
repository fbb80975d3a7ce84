"""The operator's lifecycle against a real broker: deletes and retention that survive recovery, settings
that must match the state."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from typing import Any

import pytest

from tests.harness import Deployment, listen_port

pytestmark = pytest.mark.integration

POEM = "床前明月光，疑是地上霜。举头望明月，低头思故乡。" * 3
OTHER = "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。" * 3


def _verdict_keys(deployment: Deployment) -> dict[str, bytes | None]:
    """The latest value per key of the verdict topic (None: a tombstone)."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(deployment.verdicts, bootstrap_servers=deployment.broker.bootstrap,
                             auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=2000)
    latest: dict[str, bytes | None] = {}
    try:
        for message in consumer:
            latest[message.key.decode()] = message.value
    finally:
        consumer.close()
    return latest


def _metric(port: int, name: str) -> float:
    """A worker's Prometheus metric (0 while the port does not answer)."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return 0.0
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " "))


def _wait_for(check: Any, timeout: float, deployment: Deployment) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        deployment.check_alive()
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in {timeout:.0f} s\n{deployment.log_digest()}")
        time.sleep(1)


@pytest.mark.parametrize("loss", ["sigkill", "data_dir"])
def test_deletes_survive_recovery(deployment: Deployment, loss: str) -> None:
    data = deployment.tmp / "w-0"
    first = deployment.start_worker("w", data=data)
    deployment.publish([{"id": "orig", "text": POEM, "ts": 1.0}, {"id": "other", "text": OTHER, "ts": 2.0}])
    deployment.final_table(2)
    deployment.publish([(b"orig", None)])  # a Kafka tombstone deletes the document
    _wait_for(lambda: _verdict_keys(deployment).get("orig", b"") is None, 60, deployment)
    deployment.publish([{"id": "unknown", "op": "delete"}])
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    if loss == "data_dir":
        shutil.rmtree(data)  # everything comes back from the changelogs alone
    deployment.restart_after_kill("again", data)
    deployment.publish([{"id": "copy", "text": POEM, "ts": 3.0}, {"id": "copy2", "text": OTHER, "ts": 4.0}])
    _wait_for(lambda: {"copy", "copy2"} <= set(_verdict_keys(deployment)), 120, deployment)
    latest = _verdict_keys(deployment)
    copy, copy2 = (json.loads(latest[k] or b"{}") for k in ("copy", "copy2"))
    assert copy["verdict"] == "unique", copy  # the deleted original did not come back with the state
    assert copy2["canonical"] == "other", copy2  # what was not deleted did
    assert latest["orig"] is None and "unknown" not in latest


def test_retention_limits_matches_and_its_deletions_survive_recovery(deployment: Deployment) -> None:
    data = deployment.tmp / "w-0"
    env = {"DEDUP_RETENTION": "1h", "DEDUP_LATE_ALLOWANCE": "60s"}
    port = listen_port()
    first = deployment.start_worker("w", data=data, env={**env, "DEDUP_METRICS_PORT": str(port)})
    day = 86_400.0
    deployment.publish([{"id": "day0", "text": POEM, "ts": 0.0}, {"id": "day0+30m", "text": POEM, "ts": 1800.0}])
    table = deployment.final_table(2)
    assert table["day0+30m"]["canonical"] == "day0"  # 30 min apart: within an hour
    # a document a day later makes the partitions expire what is older than its time - 1h - 60 s
    deployment.publish([{"id": "day1", "text": POEM, "ts": day}])
    table = deployment.final_table(3)
    assert table["day1"]["verdict"] == "unique"  # a day apart: never a match, whatever expired

    def expired() -> bool:  # expiry runs in the batches that touch a partition, at most every 10 s
        deployment.publish([{"id": f"filler-{time.monotonic_ns()}", "text": OTHER, "ts": day + 1}])
        return _metric(port, "dedup_expired_total") >= 2

    _wait_for(expired, 60, deployment)
    # the expiry's deletions went to the changelog: a worker rebuilding from it alone has no day0 either,
    # so a late copy dated day0+10m finds nothing, where a full index would have matched it
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    shutil.rmtree(data)
    deployment.restart_after_kill("again", data, env=env)
    deployment.publish([{"id": "late", "text": POEM, "ts": 600.0}])
    _wait_for(lambda: "late" in _verdict_keys(deployment), 120, deployment)
    late = json.loads(_verdict_keys(deployment)["late"] or b"{}")
    assert late["verdict"] == "unique", late
    assert "Traceback" not in (deployment.tmp / "again.log").read_text()


def test_a_worker_with_other_settings_refuses_the_state(deployment: Deployment) -> None:
    first = deployment.start_worker("w")
    deployment.publish([{"id": "a", "text": POEM}])
    deployment.final_table(1)
    deployment.stop()
    other = deployment.start_worker("strict", env={"DEDUP_THRESHOLD": "0.9"})
    other.may_fail = True  # type: ignore[attr-defined]
    deployment.publish([{"id": "b", "text": POEM}])
    assert other.wait(120) == 3
    log = (deployment.tmp / "strict.log").read_text()
    assert "was built with other settings (threshold: 0.8 -> 0.9)" in log and "new app_id" in log
    assert first.returncode == 0
