"""A deployment on a real broker for tests and benchmarks: workers as subprocesses, kafka-python as the
independent client (it is in the [test] and [bench] extras), and the single-process reference answer."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

PARTITIONS = 4
DEAD_MEMBER_S = 11  # the broker expires a SIGKILLed member (session timeout 10 s) before its successor joins
Row = tuple[str, str | None, tuple[str, ...]]  # verdict, canonical, sorted match ids


_LISTEN_PORTS = itertools.count()


def listen_port() -> int:
    """A free port for a listener a test starts (a worker's metrics, the console, a broker), below the
    ephemeral range: a port found free by binding port 0 lies in that range, where any outgoing
    connection (the broker's clients) or another test's port 0 may take it before the listener binds
    it (a worker then exits 2: "already in use"). Each pytest-xdist worker takes its own 400 ports,
    so two tests never pick the same one."""
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0) % 31  # 20000-32399
    for _ in range(400):
        port = 20000 + 400 * worker + next(_LISTEN_PORTS) % 400
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free listener port left for this test process")


def demo_docs() -> list[dict[str, Any]]:
    text = resources.files("stream").joinpath("data/demo/tang_demo.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def demo_pairs() -> set[frozenset[str]]:
    text = resources.files("stream").joinpath("data/demo/tang_demo_pairs.jsonl").read_text(encoding="utf-8")
    return {frozenset((p["a"], p["b"])) for p in map(json.loads, text.splitlines()) if p}


def row(verdict: dict[str, Any]) -> Row:
    return (verdict["verdict"], verdict["canonical"], tuple(sorted(m["id"] for m in verdict["matches"])))


def rows(table: dict[str, dict[str, Any]]) -> dict[str, Row]:
    """A verdict table (id -> verdict) as comparable rows."""
    return {k: row(v) for k, v in table.items()}


def reference(docs: Iterable[dict[str, Any]]) -> dict[str, Row]:
    """The single-process answer (same core, same settings) in canonical order (ts, id)."""
    from stream.detect import Detector
    from stream.fingerprint import FingerprintConfig, Fingerprinter, parse_document
    from stream.index import BlockIndex

    config = FingerprintConfig(segmenter="auto")
    fingerprinter = Fingerprinter(config)
    detector = Detector(BlockIndex(None, k=3, bands=config.band_tables))
    parsed = sorted((parse_document(d) for d in docs), key=lambda d: (d.ts, d.id))
    out = {}
    for doc in parsed:
        fp = fingerprinter.fingerprint(doc)
        order = (float(doc.ts or 0.0), doc.id)
        out[doc.id] = row(detector.detect(fp, order).to_json())
    return out


@dataclass
class Deployment:
    """One app id (consumer group) with its own topics on the shared broker."""

    broker: Any
    tmp: Path
    app_id: str = field(default_factory=lambda: "t" + uuid.uuid4().hex[:8])
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    # worker name -> its metrics port: a failing wait reports where each live worker's documents got to
    metrics_ports: dict[str, int] = field(default_factory=dict)
    overrides: dict[str, str] = field(default_factory=dict)  # settings (DEDUP_*) of this deployment

    @classmethod
    @contextmanager
    def running(cls, broker: Any, tmp: Path, overrides: dict[str, str] | None = None) -> Iterator[Deployment]:
        """A deployment with its topics made, its workers stopped on leaving."""
        d = cls(broker, tmp, overrides=overrides or {})
        d.apply_topology()
        try:
            yield d
        finally:
            d.stop()

    @property
    def documents(self) -> str:
        return f"{self.app_id}.documents"

    @property
    def verdicts(self) -> str:
        return f"{self.app_id}.verdicts"

    @property
    def dlq(self) -> str:
        return f"{self.app_id}.dlq"

    def env(self) -> dict[str, str]:
        return {
            **os.environ, "PYTHONUNBUFFERED": "1",
            "DEDUP_BROKER": self.broker.url, "DEDUP_APP_ID": self.app_id,
            "DEDUP_PARTITIONS": str(PARTITIONS), "DEDUP_REBALANCE_TIMEOUT": "2",
            "DEDUP_DOCUMENTS_TOPIC": self.documents, "DEDUP_VERDICTS_TOPIC": self.verdicts,
            "DEDUP_DLQ_TOPIC": self.dlq, "DEDUP_BATCH_SIZE": "64",
            # revisions held at most 1 s (default 30 s), so that a final table settles within 3 s
            "DEDUP_REVISION_INTERVAL": "1s", **self.overrides,
        }

    def start_worker(self, name: str, data: Path | None = None, env: dict[str, str] | None = None
                     ) -> subprocess.Popen[bytes]:
        data = data or self.tmp / f"{name}-{len(self.workers)}"
        log = open(self.tmp / f"{name}.log", "ab")  # noqa: SIM115
        env = {"DEDUP_METRICS_PORT": str(listen_port()), **(env or {})}
        self.metrics_ports[name] = int(env["DEDUP_METRICS_PORT"])
        proc = subprocess.Popen([sys.executable, "-m", "stream", "worker", "--data-dir", str(data)],
                                env={**self.env(), **env}, stdout=log, stderr=subprocess.STDOUT)
        self.workers.append(proc)
        return proc

    def restart_after_kill(self, name: str, data: Path, env: dict[str, str] | None = None,
                           ready_within: float = 60.0) -> subprocess.Popen[bytes]:
        """A successor on a SIGKILLed worker's data dir, once the broker has expired the dead member.
        tansu now and then never assigns partitions to a member that joins after a killed one (no
        assignment in its log for minutes): a successor not ready within ``ready_within`` s is stopped
        and started once more, and the digest of a later failure says so."""
        time.sleep(DEAD_MEMBER_S)
        worker = self.start_worker(name, data=data, env=env)
        try:
            self.wait_ready(data, timeout=ready_within)
        except AssertionError:
            with open(self.tmp / f"{name}.log", "ab") as log:
                # WARNING: log_digest keeps such lines, not only each log's last ones
                log.write(f"harness WARNING: not ready after {ready_within:.0f} s, stopped and started again\n"
                          .encode())
            worker.send_signal(signal.SIGTERM)
            worker.wait(60)
            worker = self.start_worker(name, data=data, env=env)
        return worker

    def apply_topology(self) -> None:
        from stream.service.runtime.worker_process import apply_topology
        from stream.service.settings import load_settings

        apply_topology(load_settings(env=self.env()), lambda _m: None)

    def publish(self, docs: Iterable[dict[str, Any] | tuple[bytes | None, bytes | None]]) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.broker.bootstrap, linger_ms=5, max_request_size=8 << 20)
        for d in docs:
            if isinstance(d, tuple):
                producer.send(self.documents, key=d[0], value=d[1])
            else:
                producer.send(self.documents, key=d["id"].encode(), value=json.dumps(d, ensure_ascii=False).encode())
        producer.flush()
        producer.close()

    def read(self, topic: str, until: Any = None, timeout: float = 90.0) -> list[dict[str, Any]]:
        """Every record of ``topic`` (JSON values) until ``until(records)`` holds or ``timeout``."""
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(topic, bootstrap_servers=self.broker.bootstrap, auto_offset_reset="earliest",
                                 enable_auto_commit=False, consumer_timeout_ms=1000, fetch_max_bytes=64 << 20,
                                 max_partition_fetch_bytes=16 << 20)
        records: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                for msg in consumer:
                    if msg.value is not None:
                        records.append(json.loads(msg.value))
                if until is None or until(records):
                    if until is None and records:
                        break
                    if until is not None:
                        break
                self.check_alive()
        finally:
            consumer.close()
        return records

    def await_verdicts(self, n: int, timeout: float = 90.0) -> None:
        """Until the verdict topic holds at least ``n`` records (revisions count)."""
        self.read(self.verdicts, until=lambda r: len(r) >= n, timeout=timeout)

    def final_table(self, n_docs: int, timeout: float = 120.0, settle: float = 3.0) -> dict[str, dict[str, Any]]:
        """Latest verdict per id once every document has one and nothing changed for ``settle`` s."""
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(self.verdicts, bootstrap_servers=self.broker.bootstrap,
                                 auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=500)
        table: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + timeout
        last_change = time.monotonic()
        try:
            while time.monotonic() < deadline:
                changed = False
                for msg in consumer:
                    table[msg.key.decode()] = json.loads(msg.value)
                    changed = True
                if changed:
                    last_change = time.monotonic()
                elif len(table) >= n_docs and time.monotonic() - last_change >= settle:
                    return table
                self.check_alive()
        finally:
            consumer.close()
        raise AssertionError(f"only {len(table)}/{n_docs} verdicts within {timeout}s\n{self.log_digest()}")

    def wait_ready(self, data: Path, timeout: float = 90.0) -> None:
        """Until the worker on ``data`` is assigned, recovered and consuming (its READY file)."""
        from stream.service.runtime.app import ready_pid

        deadline = time.monotonic() + timeout
        while ready_pid(data) is None:
            self.check_alive()
            if time.monotonic() > deadline:
                raise AssertionError(f"no worker ready on {data} after {timeout:.0f} s\n{self.log_digest()}")
            time.sleep(0.2)

    def check_alive(self) -> None:
        for w in self.workers:
            if w.returncode is None and w.poll() is not None and w.returncode not in (0, -signal.SIGKILL):
                if getattr(w, "may_fail", False):
                    continue
                raise AssertionError(f"worker exited with {w.returncode}; logs in {self.tmp}\n{self.log_digest()}")

    def outcomes(self, timeout: float = 60.0) -> dict[str, int]:
        """Account for every record of the documents topic: a verdict names it (``source``), a dead
        letter names it, or another record of the same id (a newer version) has a verdict (superseded).
        Returns the counts, with ``unaccounted`` (the goal: 0)."""
        inputs = self.read_raw(self.documents, timeout=timeout, by_id=True)
        verdicts = [json.loads(m.value) for m in self.to_end(self.verdicts, timeout) if m.value is not None]
        dead = [json.loads(m.value) for m in self.to_end(self.dlq, timeout) if m.value is not None]
        judged = {(v["source"]["partition"], v["source"]["offset"]) for v in verdicts}
        lettered = {(d["source"]["partition"], d["source"]["offset"]) for d in dead}
        latest: dict[bytes | None, tuple[int, int]] = {}
        for partition, offset, key in inputs:
            if (partition, offset) in judged:
                latest[key] = max(latest.get(key, (partition, -1)), (partition, offset))
        counts = {"inputs": len(inputs), "verdicts": 0, "dead_letters": 0, "superseded": 0, "unaccounted": 0}
        for partition, offset, key in inputs:
            if (partition, offset) in judged:
                counts["verdicts"] += 1
            elif (partition, offset) in lettered:
                counts["dead_letters"] += 1
            elif key in latest and latest[key] != (partition, offset):
                counts["superseded"] += 1
            else:
                counts["unaccounted"] += 1
        return counts

    def read_raw(self, topic: str, timeout: float = 30.0, by_id: bool = False) -> list[tuple[int, int, bytes | None]]:
        """(partition, offset, key) of every record of ``topic``; with ``by_id`` the document's id in
        place of the key where the value names one (a record whose key is not its id)."""
        return [(m.partition, m.offset, _id_of(m.value) or m.key if by_id else m.key)
                for m in self.to_end(topic, timeout)]

    def to_end(self, topic: str, timeout: float = 30.0) -> list[Any]:
        """Every record of ``topic`` up to each partition's end offset when called (kafka-python records),
        without waiting for more: an empty topic answers at once. tansu's end offset can be the last
        batch's base offset + 1, but a fetch returns whole batches, so the last one is read through."""
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=self.broker.bootstrap, enable_auto_commit=False,
                                 consumer_timeout_ms=100, fetch_max_wait_ms=50, fetch_max_bytes=64 << 20,
                                 max_partition_fetch_bytes=16 << 20)
        try:
            consumer.topics()  # metadata, so that the next line knows the topic
            partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
            consumer.assign(partitions)
            consumer.seek_to_beginning()
            ends = consumer.end_offsets(partitions)
            records: list[Any] = []
            deadline = time.monotonic() + timeout
            while any(consumer.position(tp) < ends[tp] for tp in partitions):
                if time.monotonic() > deadline:
                    raise AssertionError(f"{topic}: not read to its end offsets {ends} within {timeout:.0f} s")
                records.extend(consumer)  # until 100 ms without a record
            return records
        finally:
            consumer.close()

    def log_digest(self, tail: int = 15) -> str:
        """The workers' warnings and last lines: CI keeps the test output, not the temp dir."""
        parts = []
        for log in sorted(self.tmp.glob("*.log")):
            lines = log.read_text(errors="replace").splitlines()
            notable = [ln for ln in lines[:-tail] if any(w in ln for w in ("WARNING", "ERROR", "CRITICAL"))]
            parts.append(f"--- {log.name}: {len(lines)} lines; warnings, then the last {tail}")
            parts.extend(ln[:300] for ln in notable[-40:] + lines[-tail:])
        for name, port in self.metrics_ports.items():
            parts.append(f"--- {name}'s counters: {_counters(port)}")
        return "\n".join(parts)

    def stop(self) -> None:
        for w in self.workers:
            if w.poll() is None:
                w.terminate()
        for w in self.workers:
            try:
                w.wait(15)
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait(5)


COUNTERS = ("dedup_documents_total", "dedup_probes_total", "dedup_hops_total", "dedup_verdicts_total",
            "dedup_dead_letters_total", "dedup_input_rereads")


def _counters(port: int) -> str:
    """A worker's pipeline counters from its metrics endpoint (which stage its documents reached)."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            lines = response.read().decode().splitlines()
    except OSError as exc:
        return f"no answer ({exc.__class__.__name__})"
    return "; ".join(line for line in lines if line.startswith(COUNTERS)) or "none yet"


def _id_of(value: bytes | None) -> bytes | None:
    """The id a document record names, if it is a JSON object with a string id."""
    try:
        doc = json.loads(value or b"")
    except (ValueError, RecursionError):  # not JSON, or nested too deeply (the fuzz scenario has both)
        return None
    if isinstance(doc, dict) and isinstance(doc.get("id"), str):
        return str(doc["id"]).encode("utf-8", "surrogateescape")
    return None
