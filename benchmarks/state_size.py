"""The size of a running worker's block table, read from outside: each partition's RocksDB opened as a
secondary instance (RocksDB replays the primary's files and log without writing to them), keys counted
by namespace (stream/index/records.py), and the bytes the directories take on disk."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from stream.index.records import HANDLE_NS
from stream.service.runtime.tablestore import FAUST_OFFSET_KEY
from tests.harness import disk_bytes

BLOCK_TABLE_GLOB = "v1/tables/blocks-*.db"  # Faust's layout of the worker's data dir


@dataclass(frozen=True)
class StateSize:
    records: int  # one per document per partition holding its entries (the index's document records)
    entries: int  # bucket entries: SimHash blocks and LSH bands pointing at a record
    disk_bytes: int  # the block-table partitions' RocksDB directories (SST files, write-ahead log)


def block_tables(data_dir: Path) -> list[Path]:
    return sorted(p for p in data_dir.glob(BLOCK_TABLE_GLOB) if (p / "CURRENT").exists())


def count_keys(db_path: Path, scratch: Path, entries: bool = True) -> tuple[int, int]:
    """(records, bucket entries) of one partition, as its worker has written them so far."""
    from rocksdict import AccessType, Options, Rdict

    secondary = scratch / db_path.name
    scratch.mkdir(parents=True, exist_ok=True)
    db = Rdict(str(db_path), Options(raw_mode=True), access_type=AccessType.secondary(str(secondary)))
    try:
        db.try_catch_up_with_primary()
        records = 0
        for key in cast(Iterator[bytes], db.keys(from_key=HANDLE_NS)):
            if key[:1] != HANDLE_NS:
                break
            records += 1
        n_entries = 0
        if entries:
            for key in cast(Iterator[bytes], db.keys()):
                if key[:1] >= HANDLE_NS:
                    break
                n_entries += key != FAUST_OFFSET_KEY
        return records, n_entries
    finally:
        db.close()
        shutil.rmtree(secondary, ignore_errors=True)


def state_size(data_dir: Path, scratch: Path, entries: bool = True) -> StateSize:
    tables = block_tables(data_dir)
    counts = [count_keys(p, scratch, entries) for p in tables]
    return StateSize(sum(r for r, _ in counts), sum(e for _, e in counts), disk_bytes(tables))

