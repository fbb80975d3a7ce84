"""The worker's RocksDB memory budget (``stream/service/runtime/rocks_memory.py``): every table partition database
Faust opens for a worker shares one block cache, which also holds the index and filter blocks, and
one memtable limit, whatever the number of partitions. And each table's level-0 compaction trigger
(``TABLE_LEVEL0_FILES``)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faust.stores.rocksdb import RocksDBOptions

from stream.service.runtime.app import table_options
from stream.service.runtime.patches import table_memory
from stream.service.runtime.rocks_memory import RocksMemory

MiB = 1 << 20


@pytest.fixture(autouse=True)
def patched(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(RocksDBOptions, "as_options", RocksDBOptions.as_options)  # restored after the test
    table_memory.install_table_memory()
    yield


def open_partition(path: Path, table: str, memory: RocksMemory) -> Any:
    """A table partition's database as Faust's store opens it (``Store._open_for_partition``)."""
    options = {k: v for k, v in table_options(table, memory).items() if k != "driver"}
    return RocksDBOptions(**options, use_rocksdict=True).open(path)


def fill(db: Any, keys: int, value_bytes: int, seed: int = 0) -> None:
    for i in range(keys):
        db[(seed << 32 | i).to_bytes(8, "big")] = os.urandom(value_bytes)


def prop(db: Any, name: str) -> int:
    value: int = db.property_int_value(f"rocksdb.{name}")
    return value


def test_the_partitions_of_a_worker_share_one_block_cache(tmp_path: Path) -> None:
    memory = RocksMemory(cache_bytes=16 * MiB, write_buffer_bytes=64 * MiB)
    dbs = [open_partition(tmp_path / f"blocks-{p}", "blocks", memory) for p in range(3)]
    dbs.append(open_partition(tmp_path / "gather-0", "gather_state", memory))
    fill(dbs[0], 20_000, 200)
    dbs[0].flush()
    for i in range(0, 20_000, 3):
        assert dbs[0][i.to_bytes(8, "big")] is not None
    used = prop(dbs[0], "block-cache-usage")
    assert used > 2 * MiB  # what the reads of one partition brought in
    # one cache: every partition, of every table, sees the same capacity and the same bytes
    assert {prop(db, "block-cache-capacity") for db in dbs} == {16 * MiB}
    assert {prop(db, "block-cache-usage") for db in dbs} == {used}
    assert memory.usage()[0] == used
    for db in dbs:
        db.close()


def test_the_memtables_of_all_partitions_stay_under_one_limit(tmp_path: Path) -> None:
    # each block-table partition may keep 2 x 32 MiB of memtables; together they stay near 4 MiB (a
    # memtable being flushed still counts until its flush ends)
    memory = RocksMemory(cache_bytes=16 * MiB, write_buffer_bytes=4 * MiB)
    dbs = [open_partition(tmp_path / f"blocks-{p}", "blocks", memory) for p in range(3)]
    for seed, db in enumerate(dbs):
        fill(db, 24_000, 256, seed)  # ~6 MiB a partition, 18 MiB in all
    assert sum(prop(db, "size-all-mem-tables") for db in dbs) <= 8 * MiB
    assert memory.usage()[1] <= 8 * MiB
    for db in dbs:
        db.close()


def test_the_index_and_filter_blocks_of_table_files_live_in_the_cache(tmp_path: Path) -> None:
    # outside the cache they would grow with the data, bounded by nothing
    memory = RocksMemory(cache_bytes=16 * MiB, write_buffer_bytes=64 * MiB)
    db = open_partition(tmp_path / "blocks-0", "blocks", memory)
    for round_ in range(4):
        fill(db, 25_000, 64, round_)
        db.flush()
    assert prop(db, "num-files-at-level0") + prop(db, "num-files-at-level1") >= 1
    assert prop(db, "estimate-table-readers-mem") < 64 << 10
    db.close()


def settled(db: Any, timeout: float = 30.0) -> None:
    """Wait until RocksDB has no compaction running or pending."""
    deadline = time.monotonic() + timeout
    while prop(db, "compaction-pending") or prop(db, "num-running-compactions"):
        assert time.monotonic() < deadline, "compactions still running"
        time.sleep(0.05)


def test_a_block_table_partition_compacts_level0_from_16_files_not_4(tmp_path: Path) -> None:
    # each compaction from level 0 rewrites the level below: the block table's random entry keys span it
    memory = RocksMemory(cache_bytes=16 * MiB, write_buffer_bytes=64 * MiB)
    blocks = open_partition(tmp_path / "blocks-0", "blocks", memory)
    gather = open_partition(tmp_path / "gather-0", "gather_state", memory)  # RocksDB's default
    for db in (blocks, gather):
        for round_ in range(8):
            fill(db, 2_000, 64, round_)
            db.flush()
        settled(db)
    assert prop(blocks, "num-files-at-level0") == 8
    assert prop(gather, "num-files-at-level0") < 4
    for round_ in range(8, 16):
        fill(blocks, 2_000, 64, round_)
        blocks.flush()
    settled(blocks)
    assert prop(blocks, "num-files-at-level0") < 16  # the 16th file started a compaction
    for db in (blocks, gather):
        db.close()
