"""Private state of Faust that the worker reads without patching anything.

- ``partition_db``: Faust's RocksDB store opens one rocksdict database per table partition
  (``faust.stores.rocksdb.Store._db_for_partition``,
  https://github.com/faust-streaming/faust/blob/v0.15.2/faust/stores/rocksdb.py#L482) and has no
  public way to reach it; the index reads and writes it directly (``runtime/tablestore.py``).
- ``FAUST_OFFSET_KEY``: the key under which that store keeps, in the same database, the changelog
  offset it has applied (``Store.offset_key``); a scan of the table's keys skips it.
- ``committed_offsets``: the consumer's last committed offset per partition
  (``faust.transport.consumer.Consumer._committed_offset``), for the lag of a partition with nothing
  processed since its assignment.
- ``held_offsets``: per partition, the last record handed to the streams and not yet acknowledged:
  in a channel's buffer (``Conductor._tp_index`` -> ``Channel._queue``, an ``asyncio.Queue`` whose
  items are in its ``_queue`` deque) or taken by a stream (``Consumer._unacked_messages``), so that the
  input ledger tells a partition waiting its turn from one whose fetched records were lost.

Checked against faust-streaming 0.15.3 (both the same from 0.13.2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faust.channels import Channel
from faust.stores.rocksdb import Store
from faust.transport.conductor import Conductor
from faust.transport.consumer import Consumer

from stream.service.runtime.patches.target import Read

READS = (Read(Store, "_db_for_partition"), Read(Store, "offset_key"), Read(Consumer, "_committed_offset"),
         Read(Conductor, "_tp_index"), Read(Channel, "_queue"), Read(Consumer, "_unacked_messages"))
FAUST_OFFSET_KEY: bytes = Store.offset_key


def partition_db(table: Any, partition: int) -> Any:
    """The rocksdict ``Rdict`` Faust keeps for ``partition`` of ``table`` (opened on first use)."""
    return table.data._db_for_partition(partition)


def committed_offsets(consumer: Any) -> Mapping[Any, int | None]:
    """tp -> the offset last committed for it ({} before the consumer has started)."""
    committed: Mapping[Any, int | None] = getattr(consumer, "_committed_offset", {})
    return committed


def held_offsets(app: Any, topic: str) -> dict[tuple[str, int], int]:
    """(topic, partition) -> the highest offset of a record of ``topic`` handed to the streams and not
    yet acknowledged (buffered in a channel, or taken by a stream)."""
    held: dict[tuple[str, int], int] = {}

    def hold(message: Any) -> None:
        tp = (message.topic, message.partition)
        if message.topic == topic and message.offset > held.get(tp, -1):
            held[tp] = message.offset

    for tp, channels in list(app.topics._tp_index.items()):
        if tp.topic != topic:
            continue
        for channel in list(channels):
            queue = channel._queue
            for event in list(getattr(queue, "_queue", ())):
                hold(event.message)
    for message in list(app.consumer._unacked_messages):
        hold(message)
    return held
