"""Key-value storage under the block table (store layer, as quix-streams layers its state).

Every backend offers the same small surface so that one ``BlockIndex`` runs on
- ``MemoryStore``  (tests, in-process scans),
- ``RocksStore``   (rocksdict, one database per state partition),
- the streaming service's Faust-table adapter (writes go through the table, hence to its changelog).

Keys and values are bytes. Writes are small (one entry per key) so that every state change fits in
one changelog message.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol


class KVStore(Protocol):
    def get(self, key: bytes) -> bytes | None: ...

    def multi_get(self, keys: Sequence[bytes]) -> list[bytes | None]: ...

    def put(self, key: bytes, value: bytes) -> None: ...

    def delete(self, key: bytes) -> None: ...

    def write_batch(self, puts: Iterable[tuple[bytes, bytes]], deletes: Iterable[bytes] = ()) -> None:
        """Apply many puts and deletes together (atomically where the backend can)."""
        ...

    def scan_prefix(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """All (key, value) whose key starts with ``prefix``, in key order."""
        ...

    def flush(self) -> None: ...

    def close(self) -> None: ...
