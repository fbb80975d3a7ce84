"""The worker's RocksDB memory budget (``runtime/rocks_memory.py``) in every table database Faust opens.

Upstream: faust-streaming builds each partition database's options in ``RocksDBOptions.as_options``
(https://github.com/faust-streaming/faust/blob/v0.15.2/faust/stores/rocksdb.py#L158) with a block
cache of its own and no write-buffer manager, and has no setting to share them; table options it does
not know go to ``RocksDBOptions.extra_options``, which its rocksdict path leaves unused.

Patched: ``RocksDBOptions.as_options``: where a table's options carry ``MEMORY_OPTION`` (a
``RocksMemory``), its shared cache and write-buffer manager replace the database's own. Checked
against faust-streaming 0.15.3 (the same method from 0.13.2) and rocksdict 0.3.29.
"""

from __future__ import annotations

from typing import Any

from faust.stores.rocksdb import RocksDBOptions

from stream.service.runtime.patches.target import Patch, Read, apply

MEMORY_OPTION = "dedup_rocks_memory"
_ORIGINAL_AS_OPTIONS = RocksDBOptions.as_options


def _as_options(self: Any) -> Any:
    options = _ORIGINAL_AS_OPTIONS(self)
    memory = self.extra_options.get(MEMORY_OPTION)
    if memory is not None and self.use_rocksdict:
        memory.apply(options, self.bloom_filter_size)
    return options


PATCHES = (Patch(RocksDBOptions, "as_options", _as_options),)
READS = (Read(RocksDBOptions, "extra_options"), Read(RocksDBOptions, "bloom_filter_size"))


def install_table_memory() -> None:
    """Tables opened from now on in this process share the ``RocksMemory`` their options name."""
    apply(PATCHES)
