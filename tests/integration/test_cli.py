"""The client commands against a real broker: publish with bad lines, the broker command's lifecycle."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from stream.service.runtime.embedded import port_open
from tests.harness import listen_port

pytestmark = pytest.mark.integration


def _read(broker: Any, topic: str, n: int, timeout: float = 30.0) -> list[tuple[bytes, bytes]]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=1000)
    out: list[tuple[bytes, bytes]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < n and time.monotonic() < deadline:
            out.extend((m.key, m.value) for m in consumer)
    finally:
        consumer.close()
    return out


def test_publish_reports_every_bad_line_and_delivers_every_good_one(broker: Any, tmp_path: Path) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    topic = f"publish-{time.monotonic_ns()}"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(topic, 2, 1)])
    admin.close()
    good = [{"id": f"d{i}", "text": f"document number {i}"} for i in range(20)]
    lines = [json.dumps(d).encode() for d in good]
    lines.insert(3, b"\xff\xfe not utf-8")
    lines.insert(7, json.dumps({"id": "big", "text": "x" * 2_000_000}).encode())
    lines.insert(11, b"{not json")
    lines.insert(15, json.dumps({"id": 1.5, "text": "a float id"}).encode())
    source = tmp_path / "docs.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    result = subprocess.run([sys.executable, "-m", "stream", "publish", str(source), "--broker", broker.url,
                             "--topic", topic, "--errors", str(tmp_path / "errors.jsonl")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    for number, reason in ((4, "not UTF-8"), (8, "document is 2,000,025 bytes, over the 1,000,000-byte message limit"),
                           (12, "not valid JSON"),
                           (16, "'id' must be a string")):
        assert f"line {number}: {reason}" in result.stderr, result.stderr
    assert "--max-message-bytes" in result.stderr  # the setting that raises the limit is named
    assert "published 20 documents" in result.stderr and "4 lines rejected" in result.stderr
    errors = [json.loads(line) for line in (tmp_path / "errors.jsonl").read_text().splitlines()]
    assert [e["line"] for e in errors] == [4, 8, 12, 16]
    delivered = _read(broker, topic, len(good))
    assert sorted(k.decode() for k, _ in delivered) == sorted(d["id"] for d in good)


def test_the_broker_command_stops_tansu_on_sigterm_and_is_found_by_other_commands(tmp_path: Path) -> None:
    port = listen_port()
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path), "DEDUP_BROKER": ""}
    proc = subprocess.Popen([sys.executable, "-m", "stream", "broker", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not port_open("127.0.0.1", port) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert port_open("127.0.0.1", port)
        check = subprocess.run([sys.executable, "-m", "stream", "topology", "check"], env=env,
                               capture_output=True, text=True, timeout=60)
        assert f"using the broker started by `dedup broker`: kafka://127.0.0.1:{port}" in check.stderr
        assert check.returncode == 1 and "missing" in check.stdout  # found the broker; no topics there yet
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert not port_open("127.0.0.1", port), "tansu still listens: orphaned"
        assert not (tmp_path / f"dedup-{os.getuid()}" / "broker.json").exists()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_worker_refuses_topics_with_other_partition_counts(deployment: Any) -> None:
    """Partition counts decide which partition owns a bucket or a document: a worker whose settings say
    other counts than the existing topics stops with exit 3 and one line naming them, before consuming."""
    deployment.apply_topology()  # the documents' 4 partitions and the index's default 2
    env = {**deployment.env(), "DEDUP_INDEX_PARTITIONS": "3"}
    result = subprocess.run([sys.executable, "-m", "stream", "worker", "--data-dir", str(deployment.tmp / "w")],
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    error = [line for line in result.stderr.splitlines() if "index_partitions=3" in line]
    assert len(error) == 1, result.stderr
    assert f"{deployment.app_id}-probe: has 2 partitions" in error[0]
    assert f"{deployment.app_id}-blocks-changelog: has 2 partitions" in error[0]
    assert deployment.documents not in error[0]  # its count agrees


def test_publishing_first_creates_the_topics_with_the_topology_s_partition_counts(broker: Any,
                                                                                 tmp_path: Path) -> None:
    """`dedup publish` before any worker: the documents topic (and the rest of the topology) gets the
    settings' partition counts, not the broker's default (which a worker refuses: the test above)."""
    from confluent_kafka.admin import AdminClient

    from tests.harness import Deployment

    deployment = Deployment(broker, tmp_path)  # its topics not made
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"id": f"d{i}", "text": f"文档 {i}"}) + "\n" for i in range(5)))
    env = {**deployment.env(), "DEDUP_PARTITIONS": "3"}
    result = subprocess.run([sys.executable, "-m", "stream", "publish", str(source)], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "created topics:" in result.stderr and "published 5 documents" in result.stderr
    topics = AdminClient({"bootstrap.servers": deployment.broker.bootstrap}).list_topics(timeout=10).topics
    assert len(topics[deployment.documents].partitions) == 3
    assert len(topics[f"{deployment.app_id}-probe"].partitions) == 2  # the index's default
    again = subprocess.run([sys.executable, "-m", "stream", "publish", str(source)], env=env,
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "created topics" not in again.stderr, again.stderr
