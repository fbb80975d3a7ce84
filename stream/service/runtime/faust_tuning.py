"""Measured process-wide overrides: the consumer's fetch wait Faust hard-codes, the GIL switch
interval, the garbage collector's thresholds and how Faust's fetch loop hands a record to the streams.

faust 0.15.3 builds its aiokafka consumer with ``fetch_max_wait_ms=1500``
(faust/transport/drivers/aiokafka.py). On tansu a fetch waits that long whenever some assigned
partitions have no data, and our pipeline has three consumer hops (documents -> probe -> gather),
so verdicts took 3-5 s even at low load. A short wait costs a few more idle fetch requests.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Coroutine, Generator
from typing import Any

import aiokafka
from faust.transport.consumer import Consumer
from mode.services import WaitResults

_ORIGINAL = aiokafka.AIOKafkaConsumer.__init__
_state = {"fetch_max_wait_ms": 1500}


def _init(self: Any, *topics: Any, **kwargs: Any) -> None:
    if "fetch_max_wait_ms" in kwargs:
        kwargs["fetch_max_wait_ms"] = _state["fetch_max_wait_ms"]
    _ORIGINAL(self, *topics, **kwargs)


def set_fetch_max_wait(ms: int) -> None:
    """Use ``ms`` for every aiokafka consumer Faust creates from now on in this process."""
    _state["fetch_max_wait_ms"] = ms
    aiokafka.AIOKafkaConsumer.__init__ = _init


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


# Faust's fetch loop hands each record to the streams through ``Consumer.wait_first(delivery,
# flow_suspended)``: four tasks, an ``asyncio.wait`` and three cancellations per record, 32-47 us of
# CPU (mode 0.7.1; a loop of 20,000), where the delivery itself almost never has to wait. The fast
# path runs the delivery's first step inline; only a delivery that waits (a full stream buffer, a
# suspended flow) goes through Faust's own ``wait_first``, which can still cancel it.
_ORIGINAL_WAIT_FIRST = Consumer.wait_first


class _Resumed:
    """Awaits the rest of ``coro``, which has already run up to ``pending`` (what it yielded)."""

    def __init__(self, coro: Coroutine[Any, Any, Any], pending: Any) -> None:
        self.coro, self.pending = coro, pending

    def __await__(self) -> Generator[Any, None, Any]:
        coro, pending = self.coro, self.pending
        while True:
            try:
                yield pending
            except GeneratorExit:  # closed (as ``yield from`` would): close the coroutine too
                coro.close()
                raise
            except BaseException as exc:  # a cancellation: the coroutine decides what it means
                try:
                    pending = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
                continue
            try:
                pending = coro.send(None)
            except StopIteration as stop:
                return stop.value


async def _wait_first(self: Any, *coros: Any, timeout: Any = None) -> WaitResults:
    first = coros[0] if coros else None
    if len(coros) != 2 or timeout is not None or not asyncio.iscoroutine(first) \
            or self._stopped.is_set() or self._crashed.is_set():
        return await _ORIGINAL_WAIT_FIRST(self, *coros, timeout=timeout)
    try:
        pending = first.send(None)
    except StopIteration as stop:
        _close(coros[1])
        return WaitResults([first], [stop.value], False)
    except BaseException:
        _close(coros[1])
        raise
    return await _ORIGINAL_WAIT_FIRST(self, _Resumed(first, pending), coros[1])


def _close(waitable: Any) -> None:
    if asyncio.iscoroutine(waitable):
        waitable.close()  # never started: nothing to undo, and no "never awaited" warning


def install_direct_delivery() -> None:
    """Every Faust consumer in this process delivers a record inline when nothing makes it wait."""
    Consumer.wait_first = _wait_first  # type: ignore[method-assign]
