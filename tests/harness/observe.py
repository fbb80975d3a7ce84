"""Watching a deployment from outside, for the benchmarks: verdicts as they arrive, the settled final
table, a worker's metrics, and the comparison of a table with the uninterrupted answer."""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.harness.deployment import Deployment, Row, row


class Supervisor(threading.Thread):
    """Runs a worker on ``data`` and starts it again when it exits with 75 (a fault, restart me) or 4
    (no broker), after ``backoff`` seconds, as docker's restart policy would; records every exit. The
    restarts append to the same log (``<name>.log``)."""

    RESTART_ON = (75, 4)

    def __init__(self, deployment: Deployment, name: str, data: Path, env: dict[str, str], backoff: float = 2.0
                 ) -> None:
        super().__init__(daemon=True)
        self.deployment, self.name, self.data, self.env, self.backoff = deployment, name, data, env, backoff
        self.exits: list[dict[str, Any]] = []
        self.started_at = time.monotonic()
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.is_set():
            worker = self.deployment.start_worker(self.name, data=self.data, env=self.env)
            worker.may_fail = True  # type: ignore[attr-defined]
            code = worker.wait()
            if self._stopping.is_set():
                return
            self.exits.append({"code": code, "at_s": round(time.monotonic() - self.started_at, 1)})
            if code not in self.RESTART_ON:
                return
            time.sleep(self.backoff)

    def stop(self) -> None:
        """Before ``Deployment.stop``: no restart after that."""
        self._stopping.set()


class VerdictWatch:
    """Ids with a verdict so far (a group-less consumer that keeps its position: each ``count`` reads
    only what arrived since the last one)."""

    def __init__(self, deployment: Deployment) -> None:
        from kafka import KafkaConsumer

        self.deployment = deployment
        self.consumer = KafkaConsumer(deployment.verdicts, bootstrap_servers=deployment.broker.bootstrap,
                                      auto_offset_reset="earliest", enable_auto_commit=False,
                                      fetch_max_bytes=64 << 20, max_partition_fetch_bytes=16 << 20)
        self.ids: set[bytes] = set()

    def count(self, within: float = 1.0) -> int:
        """Ids with a verdict, reading for at most ``within`` seconds (verdicts may keep coming)."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            batch = self.consumer.poll(timeout_ms=200, max_records=5_000)
            if not batch:
                break
            for records in batch.values():
                self.ids.update(r.key for r in records if r.value is not None)
        return len(self.ids)

    def wait_for(self, n: int, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while (seen := self.count()) < n:
            self.deployment.check_alive()
            if time.monotonic() > deadline:
                raise AssertionError(f"{seen}/{n} verdicts after {timeout:.0f} s\n{self.deployment.log_digest()}")
            time.sleep(0.2)
        return seen

    def close(self) -> None:
        self.consumer.close()


def publish(deployment: Deployment, records: Iterable[tuple[bytes | None, bytes | None]], rate: float | None = None,
            sent: list[int] | None = None) -> float:
    """Raw (key, value) records on the documents topic with confluent-kafka: ~10x faster than the
    harness's kafka-python producer for 50,000 documents, and it takes a record with neither key nor value.
    ``rate``: records per second (default: as fast as possible); ``sent[0]``: how many so far. Returns
    the seconds from the first record produced to the last one acknowledged (the producer connected)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": deployment.broker.bootstrap, "linger.ms": 5,
                         "message.max.bytes": 8 << 20, "enable.idempotence": True})
    failed: list[str] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(str(err))

    producer.list_topics(deployment.documents, timeout=30)  # connected before the clock starts
    started = time.monotonic()
    for i, (key, value) in enumerate(records):
        if rate and (ahead := started + i / rate - time.monotonic()) > 0:
            time.sleep(ahead)
        while True:
            try:
                producer.produce(deployment.documents, key=key, value=value, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
        if sent is not None:
            sent[0] = i + 1
    left = producer.flush(120)
    if left or failed:
        raise AssertionError(f"{left} records not delivered, {len(failed)} failed: {failed[:3]}")
    return time.monotonic() - started


def settled_table(deployment: Deployment, ids: Iterable[str], timeout: float, settle: float = 5.0
                  ) -> dict[str, dict[str, Any]]:
    """The latest verdict per id (tombstones remove it) once every id of ``ids`` has one and nothing
    changed for ``settle`` seconds."""
    from kafka import KafkaConsumer

    wanted = set(ids)
    consumer = KafkaConsumer(deployment.verdicts, bootstrap_servers=deployment.broker.bootstrap,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             fetch_max_bytes=64 << 20, max_partition_fetch_bytes=16 << 20)
    table: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout
    last_change = time.monotonic()
    try:
        while time.monotonic() < deadline:
            batch = consumer.poll(timeout_ms=500, max_records=50_000)
            for records in batch.values():
                for r in records:
                    if r.value is None:
                        table.pop(r.key.decode(), None)
                    else:
                        table[r.key.decode()] = json.loads(r.value)
            if batch:
                last_change = time.monotonic()
            elif wanted <= table.keys() and time.monotonic() - last_change >= settle:
                return table
            deployment.check_alive()
    finally:
        consumer.close()
    missing = len(wanted - table.keys())
    raise AssertionError(f"{missing} of {len(wanted)} ids without a verdict after {timeout:.0f} s\n"
                         f"{deployment.log_digest()}")


def compare(table: dict[str, dict[str, Any]], expected: dict[str, Row]) -> dict[str, Any]:
    """The final table against the uninterrupted answer: verdict, canonical and match ids per id."""
    missing = sorted(k for k in expected if k not in table)
    differing = sorted(k for k in expected if k in table and row(table[k]) != expected[k])
    return {"equal": not missing and not differing, "ids": len(expected), "missing": len(missing),
            "differing": len(differing),
            "examples": [{"id": k, "got": row(table[k]), "expected": expected[k]} for k in differing[:3]]
            + [{"id": k, "got": None, "expected": expected[k]} for k in missing[:3]]}


def accounted(deployment: Deployment, inputs: int, timeout: float = 120.0, read_timeout: float = 60.0
              ) -> dict[str, int]:
    """``Deployment.outcomes`` once every published record is read back and accounted for (dead letters
    can trail the verdicts), or as it stands after ``timeout``; ``read_timeout`` bounds each reading of
    a topic to its end offsets."""
    deadline = time.monotonic() + timeout
    while True:
        counts = deployment.outcomes(read_timeout)
        if (counts["inputs"] >= inputs and not counts["unaccounted"]) or time.monotonic() > deadline:
            return counts
        time.sleep(3)


def metric(port: int, name: str) -> float:
    """The sum of every sample of ``name`` on the worker's /metrics (0 when absent or unreachable)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except (urllib.error.URLError, OSError):
        return 0.0
    pattern = re.compile(rf"^{re.escape(name)}(?:{{[^}}]*}})? ([0-9.eE+-]+)$", re.MULTILINE)
    return sum(float(v) for v in pattern.findall(text))


def http_status(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")
    except (urllib.error.URLError, OSError) as exc:
        return 0, {"error": str(exc)}


def load() -> list[float]:
    """The 1, 5 and 15 minute load averages (``uptime``), rounded."""
    return [round(x, 2) for x in os.getloadavg()]


def disk_bytes(paths: Iterable[os.PathLike[str] | str]) -> int:
    """Bytes the files under ``paths`` occupy on disk (``du``: allocated blocks, so RocksDB's
    preallocated log files count as what they take, not as what they hold)."""
    total = 0
    for path in paths:
        for root, _dirs, files in os.walk(path):
            for name in files:
                with contextlib.suppress(FileNotFoundError):  # RocksDB deleted it meanwhile
                    total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def raw_values(deployment: Deployment, topic: str, timeout: float = 600.0) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of every record of ``topic`` up to each partition's end offset when called, values as
    bytes. A pause between fetches does not end it early (a loaded machine, a topic of 250k records)."""
    return [(m.key, m.value) for m in deployment.to_end(topic, timeout)]
