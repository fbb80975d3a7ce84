"""The worker's RocksDB memory budget (``runtime/rocks_memory.py``) and level-0 compaction trigger in
every table database Faust opens.

Upstream: faust-streaming builds each partition database's options in ``RocksDBOptions.as_options``
(https://github.com/faust-streaming/faust/blob/v0.15.2/faust/stores/rocksdb.py#L158) with a block
cache of its own and no write-buffer manager, and has no setting to share them; table options it does
not know go to ``RocksDBOptions.extra_options``, which its rocksdict path leaves unused.

Patched: ``RocksDBOptions.as_options``: where a table's options carry ``MEMORY_OPTION`` (a
``RocksMemory``), its shared cache and write-buffer manager replace the database's own; where they
carry ``LEVEL0_OPTION`` (a number of files), level 0 is compacted from that many files instead of
RocksDB's 4 (Faust's rocksdict path sets no compaction option). Checked against faust-streaming
0.15.3 (the same method from 0.13.2) and rocksdict 0.3.29.
"""

from __future__ import annotations

from typing import Any

from faust.stores.rocksdb import RocksDBOptions

from stream.service.runtime.patches.target import Patch, Read, apply
from stream.storage import set_level0_compaction

MEMORY_OPTION = "dedup_rocks_memory"
LEVEL0_OPTION = "dedup_level0_files"
_ORIGINAL_AS_OPTIONS = RocksDBOptions.as_options


def _as_options(self: Any) -> Any:
    options = _ORIGINAL_AS_OPTIONS(self)
    if not self.use_rocksdict:
        return options
    memory = self.extra_options.get(MEMORY_OPTION)
    if memory is not None:
        memory.apply(options, self.bloom_filter_size)
    level0_files = self.extra_options.get(LEVEL0_OPTION)
    if level0_files is not None:
        set_level0_compaction(options, level0_files)
    return options


PATCHES = (Patch(RocksDBOptions, "as_options", _as_options),)
READS = (Read(RocksDBOptions, "extra_options"), Read(RocksDBOptions, "bloom_filter_size"))


def install_table_memory() -> None:
    """Tables opened from now on in this process share the ``RocksMemory`` their options name and take
    their ``LEVEL0_OPTION``."""
    apply(PATCHES)
