"""The changelog end bound that table recovery uses, against the real broker (stream.service.runtime.recovery)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from stream.service.runtime.recovery import exact_last_offsets

pytestmark = pytest.mark.integration


def _topic(broker: Any, partitions: int) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = "bounds-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # must outlive the future
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(15)
    return name


def test_recovery_reads_to_the_last_record_of_the_last_batch(broker: Any) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = _topic(broker, 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 200})
    for i in range(10):  # one linger window: one record batch of 10 records on partition 0
        producer.produce(topic, key=str(i).encode(), value=b"v", partition=0)
    assert producer.flush(15) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "bounds-test"})
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    consumer.close()
    # tansu reports (base offset of the last batch) + 1 = 1 here; Apache Kafka would say 10. Either
    # way recovery must read through offset 9, and an empty partition has nothing to read (-1).
    bounds = exact_last_offsets({"bootstrap.servers": broker.bootstrap}, {(topic, 0): high, (topic, 1): 0})
    assert bounds == {(topic, 0): 9, (topic, 1): -1}, f"broker reported high watermark {high}"
