"""Changelog recovery: where it ends, and when local state can be trusted.

Faust rebuilds a table partition by reading its changelog up to (high watermark - 1). Three things
make that unsafe for us, and this module handles them:

1. **The end bound.** tansu reports a partition's high watermark as (base offset of the LAST record
   batch) + 1, not (last offset) + 1, so Faust would stop at the first record of the last batch and
   silently lose the rest (Apache Kafka reports last + 1). ``exact_last_offsets`` reads the last
   batch itself and takes the offset of its last record; on Kafka that is the same number
   (``patches/recovery_bounds.py`` makes Faust's recovery use it).
2. **Local writes ahead of the changelog.** A table write goes to the local RocksDB at once and to
   the changelog when the producer delivers it. After a crash the local database may hold writes
   whose changelog records never arrived; the redelivered input then finds them present (an index
   insert of a known id is a no-op) and never re-sends them, so another worker taking the partition
   over would miss them. ``LocalStateGuard``: a worker that did not stop cleanly (every produced
   record delivered) leaves a marker, and the next start drops the local tables and rebuilds them
   from the changelogs alone.
3. **A broker that lost its data.** A changelog that ends before the offset our local table has
   already applied means the broker's data is gone (a restarted in-memory broker, a deleted topic).
   Faust raises a ConsistencyError and the worker would crash at every start.
   ``patches/data_loss_check.py`` hands the partitions to a callback instead, which stops the worker
   with a message saying what happened and what to do (``stream.service.runtime.app``).
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("dedup.recovery")

TopicPartition = tuple[str, int]


def exact_last_offsets(conf: dict[str, Any], reported: dict[TopicPartition, int],
                       timeout: float = 10.0) -> dict[TopicPartition, int]:
    """Offset of the last record per partition (-1 if empty), given the reported high watermarks.

    Fetching from (reported - 1) returns the whole record batch that starts there (tansu) or the last
    record (Kafka); anything appended meanwhile only moves the bound later, which is safe. A partition
    that returns nothing in time (e.g. a transaction marker at the end) keeps the reported bound.
    """
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    result = {tp: hw - 1 for tp, hw in reported.items()}
    pending = {tp for tp, hw in reported.items() if hw > 0}
    if not pending:
        return result
    consumer = Consumer({**conf, "group.id": "dedup-recovery-bounds", "enable.auto.commit": False,
                         "auto.offset.reset": "latest"})
    def take(timeout: float) -> set[TopicPartition]:
        """Raise each partition's bound to the records that arrived; the partitions they came from."""
        seen = set()
        for msg in consumer.consume(10_000, timeout=timeout):
            if msg.error() is None:
                tp = (str(msg.topic()), int(msg.partition() or 0))
                result[tp] = max(result[tp], int(msg.offset() or 0))
                seen.add(tp)
        return seen

    try:
        consumer.assign([KafkaTopicPartition(t, p, result[(t, p)]) for t, p in sorted(pending)])
        deadline = time.monotonic() + timeout
        waiting = set(pending)
        while waiting and time.monotonic() < deadline:
            waiting -= take(0.2)
        take(0.2)  # the rest of each batch came in the same fetch response: drain what is already here
        if waiting:
            log.warning("no record read at the reported end of %s; keeping the broker's bound", sorted(waiting))
    finally:
        consumer.close()
    return result


DATA_LOSS_MARKER = "BROKER_DATA_LOST"


class LocalStateGuard:
    """A marker in the table directory while a worker runs; removed only after a clean stop."""

    MARKER = "RUNNING"

    def __init__(self, tabledir: Path) -> None:
        self.tabledir = Path(tabledir)
        self.marker = self.tabledir / self.MARKER

    def begin(self) -> bool:
        """Start a run; True if the last run did not stop cleanly and its local tables were dropped."""
        dropped = False
        if self.marker.exists():
            shutil.rmtree(self.tabledir)
            dropped = True
        self.tabledir.mkdir(parents=True, exist_ok=True)
        self.marker.write_text("a worker is running, or did not stop cleanly\n")
        return dropped

    def end(self, clean: bool) -> None:
        """``clean``: every record this worker produced was delivered (local state == changelog)."""
        if clean:
            self.marker.unlink(missing_ok=True)
