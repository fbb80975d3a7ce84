"""``python -m benchmarks reliability`` scenarios of one truth per id: an id sent twice, the older version under
another key (so in another partition) and delivered in either order, with and without a SIGKILL. The
final verdict of every id must be its newest version's, whatever the arrival."""

from __future__ import annotations

import json
import os
import signal
import time
from typing import Any

from benchmarks.reliability_run import Run
from tests.harness import Deployment, VerdictWatch, accounted, raw_values, settled_table

Versioned = tuple[bytes, bytes, int]  # key, value, record timestamp (ms)


def two_key_records(run: Run, n: int) -> tuple[list[Versioned], dict[str, int]]:
    """Per id an older and a newer version (another poem) 5 ms apart by record timestamp, the older under
    the key ``old-<id>``; every other id has the newer one published first. Returns the records in
    publishing order and the index of each id's newer record."""
    poems = run.poems
    base = int(time.time() * 1000) - 10 * n - 1000
    records: list[Versioned] = []
    newer_at: dict[str, int] = {}
    for i in range(n):
        doc_id = f"two-{i:05d}"
        old = (f"old-{doc_id}".encode(), _doc(doc_id, poems[i]["text"]), base + 10 * i)
        new = (doc_id.encode(), _doc(doc_id, poems[(i + n) % len(poems)]["text"]), base + 10 * i + 5)
        pair = [new, old] if i % 2 == 0 else [old, new]
        newer_at[doc_id] = len(records) + pair.index(new)
        records.extend(pair)
    return records, newer_at


def _doc(doc_id: str, text: str) -> bytes:
    return json.dumps({"id": doc_id, "text": text}, ensure_ascii=False).encode()


def publish_timed(d: Deployment, records: list[Versioned]) -> list[tuple[int, int]]:
    """The records with their own timestamps; each one's (partition, offset), in the order given."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": d.broker.bootstrap, "linger.ms": 5, "enable.idempotence": True})
    positions: list[tuple[int, int]] = [(-1, -1)] * len(records)

    def report(i: int) -> Any:
        def on_delivery(err: Any, msg: Any) -> None:
            if err is None:
                positions[i] = (msg.partition(), msg.offset())
        return on_delivery

    producer.list_topics(d.documents, timeout=30)
    for i, (key, value, ts) in enumerate(records):
        producer.produce(d.documents, key=key, value=value, timestamp=ts, on_delivery=report(i))
        producer.poll(0)
    if producer.flush(120) or (-1, -1) in positions:
        raise AssertionError("records not delivered")
    return positions


def two_keys(run: Run, kill: bool = False) -> dict[str, Any]:
    n = run.scale.two_key_ids
    records, newer_at = two_key_records(run, n)
    name = "two-keys-sigkill" if kill else "two-keys"
    with run.deployment(name) as d:
        data = d.tmp / "data"
        env = {**run.worker_env, "DEDUP_BATCH_SIZE": "16"}  # small batches: the two versions in different ones
        worker = d.start_worker("w", data=data, env=env)
        d.wait_ready(data, run.scale.timeout)
        positions = publish_timed(d, records)
        killed_at = None
        if kill:
            watch = VerdictWatch(d)
            watch.wait_for(n // 2, run.scale.timeout)
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait()
            killed_at = watch.count()
            watch.close()
            d.restart_after_kill("w2", data, env=env, ready_within=run.scale.timeout)
        table = settled_table(d, list(newer_at), run.scale.timeout)
        newest = sum((table[i]["source"]["partition"], table[i]["source"]["offset"]) == positions[at]
                     for i, at in newer_at.items())
        records_per_id = len([v for _, v in raw_values(d, d.verdicts) if v is not None]) / n
        counts = accounted(d, len(records))
    return {**counts, "ids": n, "final_from_newest": newest, "verdict_records_per_id": round(records_per_id, 2),
            "ids_with_a_verdict_at_sigkill": killed_at}


def two_keys_sigkill(run: Run) -> dict[str, Any]:
    return two_keys(run, kill=True)


SCENARIOS = {"two-keys": two_keys, "two-keys-sigkill": two_keys_sigkill}
