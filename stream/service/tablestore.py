"""KVStore adapter over one partition of a Faust table on the RocksDB (rocksdict) store.

Reads (get, multi-get, prefix scans) go straight to the partition's rocksdict database, which
Faust opened and restores from the changelog on recovery. Every write goes to that database AND
to the table's changelog topic (same partition, raw bytes key/value; None deletes), so another
worker taking the partition over rebuilds exactly this state.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from stream.service.output import Output

FAUST_OFFSET_KEY = b"__faust\0offset__"  # faust.stores.rocksdb.Store.offset_key


def partition_db(table: Any, partition: int) -> Any:
    """The rocksdict ``Rdict`` Faust keeps for ``partition`` of ``table`` (opened on first use)."""
    return table.data._db_for_partition(partition)


class FaustTableStore:
    """``stream.index.store.KVStore`` over ``table``'s partition ``partition``."""

    def __init__(self, table: Any, partition: int, output: Output) -> None:
        from rocksdict import WriteBatch

        self._write_batch_cls = WriteBatch
        self.table = table
        self.partition = partition
        self.output = output
        self.topic = table.changelog_topic.get_topic_name()
        self.db = partition_db(table, partition)

    def get(self, key: bytes) -> bytes | None:
        value: bytes | None = self.db.get(key)
        return value

    def multi_get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        if not keys:
            return []
        values: list[bytes | None] = self.db.get(list(keys))
        return values

    def put(self, key: bytes, value: bytes) -> None:
        self.db.put(key, value)
        self.output.changelog(self.topic, self.partition, key, value)

    def delete(self, key: bytes) -> None:
        self.db.delete(key)
        self.output.changelog(self.topic, self.partition, key, None)

    def write_batch(self, puts: Iterable[tuple[bytes, bytes]], deletes: Iterable[bytes] = ()) -> None:
        # The changelog keeps this order (puts as given, then deletes): see KVStore.write_batch.
        batch = self._write_batch_cls(raw_mode=True)
        for key, value in puts:
            batch.put(key, value)
            self.output.changelog(self.topic, self.partition, key, value)
        for key in deletes:
            batch.delete(key)
            self.output.changelog(self.topic, self.partition, key, None)
        self.db.write(batch)

    def scan_prefix(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        it = self.db.iter()
        it.seek(prefix)
        while it.valid():
            key = it.key()
            if not key.startswith(prefix):
                break
            if key != FAUST_OFFSET_KEY:
                yield key, it.value()
            it.next()

    def flush(self) -> None:
        """Durability comes from the changelog (flushed by the agent); RocksDB keeps its WAL."""

    def close(self) -> None:
        """Faust owns the database: nothing to close here."""
