"""Measured process-wide settings of a worker: the GIL switch interval and the garbage collector's
thresholds. (What the worker changes inside Faust, aiokafka and mode is in ``patches/``.)"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from collections.abc import Callable

# Faust runs aiokafka in a second thread and our output has a delivery-report thread; the agents'
# RocksDB and librdkafka calls release the GIL, and getting it back waits for the switch interval
# (5 ms by default) while another thread runs Python. Measured at 100 docs/s, 1 worker, one core
# busy with another process: p50/p99 2.2-4.4 s / 5.0-7.5 s at 5 ms, 0.10-0.34 s / 0.29-1.06 s at 0.5 ms.
SWITCH_INTERVAL_S = 0.0005


def set_switch_interval(seconds: float = SWITCH_INTERVAL_S) -> None:
    """Shorter GIL hand-overs for this process (``sys.setswitchinterval``)."""
    sys.setswitchinterval(seconds)


# The collector runs a young collection every 700 container allocations, an older one every 10 of
# those and, now and then, a full one over the whole heap (Faust, jieba's dictionary, numba). A worker
# allocates tens of thousands of containers per batch (messages, records, hits): in-process the stages
# spent 200-250 us per document in GC (of ~2.1 ms). With the start-up heap frozen and these
# thresholds: 26-31 us (the three stages in-process on the e2e documents; docs/service.md, "Garbage
# collection").
GC_THRESHOLDS = (10_000, 50, 100)


def tune_gc(thresholds: tuple[int, int, int] = GC_THRESHOLDS) -> None:
    """Fewer, cheaper collections for a long-running worker: freeze the start-up heap, raise the
    thresholds. Cycles are still collected, only later."""
    gc.freeze()
    gc.set_threshold(*thresholds)


def heap_trimmer() -> Callable[[], None] | None:
    """glibc's ``malloc_trim(0)``, or None where the C library has none (musl, macOS). RocksDB's memtables
    are allocated from the C heap: after a flush their pages stay free inside it, and without a trim
    the RSS keeps each flush's high-water mark (measured on a 100,000-document backlog: 4-39 MiB
    given back per trim, a trim 1-31 ms)."""
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: trim(0)
