"""Where the worker's consumer group began reading partitions it has no position for: the group's
committed offset, else (none committed: a new deployment) the log's first offset, where
``auto_offset_reset`` earliest starts. Asked of the broker, since Faust's own map of committed offsets
is filled only when it seeks, after its first fetch may already have run (``runtime/ledger.py``)."""

from __future__ import annotations

from collections.abc import Sequence

from stream.service.runtime.ledger import TP
from stream.service.settings import Settings


def reading_starts(settings: Settings, tps: Sequence[TP]) -> dict[TP, int]:
    """(topic, partition) -> the offset the group reads first; blocking (run it in a thread). Raises
    what the client raises when the broker does not answer within ``connect_timeout``."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(settings.confluent(**{"group.id": settings.app_id, "enable.auto.commit": False}))
    try:
        starts: dict[TP, int] = {}
        committed = consumer.committed([TopicPartition(t, p) for t, p in tps], timeout=settings.connect_timeout)
        for tp in committed:
            if tp.error is not None:
                continue
            if tp.offset < 0:  # none committed (OFFSET_INVALID)
                tp.offset, _ = consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition),
                                                              timeout=settings.connect_timeout)
            starts[(tp.topic, tp.partition)] = tp.offset
        return starts
    finally:
        consumer.close()
