"""KVStore adapter over one partition of a Faust table on the RocksDB (rocksdict) store.

Reads (get, multi-get, prefix scans) go straight to the partition's rocksdict database, which
Faust opened and restores from the changelog on recovery. Every write goes to that database AND
to the table's changelog topic (same partition, raw bytes key/value; None deletes), so another
worker taking the partition over rebuilds exactly this state, except keys in ``unlogged``
namespaces: those are a function of other keys (the block index's doc-id and expiry keys, derived
from its records), written to RocksDB only and rebuilt after recovery (``stream.index.rebuild_derived_keys``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from stream.errors import StorageError
from stream.service.runtime.patches import FAUST_OFFSET_KEY, partition_db
from stream.service.stages.output import Output


@contextmanager
def storage(what: str) -> Iterator[None]:
    """Any error of RocksDB (rocksdict raises plain ``Exception("IO error: ...")``) as a ``StorageError``:
    the disk, not the document, failed."""
    try:
        yield
    except StorageError:
        raise
    except Exception as exc:
        raise StorageError(f"RocksDB {what} failed: {exc}") from exc


class FaustTableStore:
    """``stream.storage.KVStore`` over ``table``'s partition ``partition``; every RocksDB failure
    is raised as ``StorageError``."""

    def __init__(self, table: Any, partition: int, output: Output, unlogged: bytes = b"") -> None:
        from rocksdict import WriteBatch

        self._write_batch_cls = WriteBatch
        self.table = table
        self.partition = partition
        self.output = output
        self.topic = table.changelog_topic.get_topic_name()
        self.db = partition_db(table, partition)
        self.unlogged = frozenset(unlogged)  # first bytes of keys kept out of the changelog

    def get(self, key: bytes) -> bytes | None:
        with storage("read"):
            value: bytes | None = self.db.get(key)
        return value

    def multi_get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        if not keys:
            return []
        with storage("read"):
            values: list[bytes | None] = self.db.get(list(keys))
        return values

    def put(self, key: bytes, value: bytes) -> None:
        with storage("write"):
            self.db.put(key, value)
        if key[:1] and key[0] not in self.unlogged:
            self.output.changelog(self.topic, self.partition, key, value)

    def delete(self, key: bytes) -> None:
        with storage("write"):
            self.db.delete(key)
        if key[:1] and key[0] not in self.unlogged:
            self.output.changelog(self.topic, self.partition, key, None)

    def write_batch(self, puts: Iterable[tuple[bytes, bytes]], deletes: Iterable[bytes] = ()) -> None:
        # The changelog keeps this order (puts as given, then deletes): see KVStore.write_batch.
        self.write_ops([*puts, *((key, None) for key in deletes)])

    def write_ops(self, ops: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Puts (value) and deletes (None) in the given order: one RocksDB batch, the changelog in
        the same order (what ``BufferedStore`` drains into)."""
        batch = self._write_batch_cls(raw_mode=True)
        unlogged = self.unlogged
        put, delete = batch.put, batch.delete
        logged = []
        for op in ops:
            key, value = op
            if value is None:
                delete(key)
            else:
                put(key, value)
            if key[0] not in unlogged:
                logged.append(op)
        self.output.changelog_many(self.topic, self.partition, logged)
        with storage("write"):
            self.db.write(batch)

    def scan_prefix(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        with storage("scan"):
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
