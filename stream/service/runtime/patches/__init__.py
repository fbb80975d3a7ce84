"""Every change the worker makes inside faust-streaming, aiokafka and mode, and every private name of
theirs it reads: one module per patch, each naming the upstream behaviour it changes and the versions
it was checked against.

- ``offset_gaps``: no commit past records fetched but not delivered, or delivered but not processed
  (``Consumer.__init__``, ``getmany``, ``on_partitions_revoked``, ``_new_offset``, ``_commit_offsets``);
- ``recovery_bounds``: table recovery reads each changelog to its real last record
  (``Recovery._build_highwaters``);
- ``data_loss_check``: a changelog that ends before the local table stops the worker with a message
  (``Recovery._build_offsets``);
- ``fetch_wait``: the consumer's fetch wait Faust hard-codes (``AIOKafkaConsumer.__init__``);
- ``direct_delivery``: a record handed to the streams without four tasks (``Consumer.wait_first``);
- ``table_memory``: every table database shares the worker's RocksDB block cache and memtable limit,
  and takes its table's level-0 compaction trigger (``RocksDBOptions.as_options``);
- ``internals``: private reads (``Store._db_for_partition``, ``Store.offset_key``,
  ``Consumer._committed_offset``, the streams' buffers and unacknowledged records).

Importing this package first checks the installed versions (``versions.SUPPORTED``, the ranges
pyproject.toml pins) and raises ``UnsupportedVersion`` outside them, before any patched attribute is
looked up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stream.service.runtime.patches.versions import SUPPORTED, check_versions

check_versions()

from stream.service.runtime.patches import (  # noqa: E402  (after the version check)
    data_loss_check,
    direct_delivery,
    fetch_wait,
    internals,
    offset_gaps,
    recovery_bounds,
    table_memory,
)
from stream.service.runtime.patches.internals import (  # noqa: E402
    FAUST_OFFSET_KEY,
    committed_offsets,
    held_offsets,
    partition_db,
)
from stream.service.runtime.patches.offset_gaps import known_ends, request_seek  # noqa: E402
from stream.service.runtime.patches.table_memory import LEVEL0_OPTION, MEMORY_OPTION  # noqa: E402

MODULES = (offset_gaps, recovery_bounds, data_loss_check, fetch_wait, direct_delivery, table_memory, internals)


def install_patches(fetch_max_wait_ms: int, recovery_conf: dict[str, Any],
                    on_data_loss: Callable[[list[str]], None]) -> None:
    """Apply every patch to this process (idempotent). ``recovery_conf``: confluent-kafka settings for
    reading the changelogs' last records; ``on_data_loss``: called with what a lost changelog held."""
    fetch_wait.set_fetch_max_wait(fetch_max_wait_ms)
    direct_delivery.install_direct_delivery()
    recovery_bounds.install_exact_recovery_bounds(recovery_conf)
    data_loss_check.install_data_loss_check(on_data_loss)
    offset_gaps.install_gap_guard()
    table_memory.install_table_memory()


__all__ = ["FAUST_OFFSET_KEY", "LEVEL0_OPTION", "MEMORY_OPTION", "MODULES", "SUPPORTED", "check_versions",
           "committed_offsets", "held_offsets", "install_patches", "known_ends", "partition_db", "request_seek"]
