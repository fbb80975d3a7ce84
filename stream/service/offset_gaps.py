"""Never let Faust commit past records it fetched but did not deliver.

Faust's fetch loop (``Consumer._drain_messages``) treats any jump in offsets between two delivered
records of an acknowledged topic as a compaction gap and marks the missing offsets as acknowledged.
But ``Consumer.getmany`` also drops records silently, for instance those of partitions paused or
resumed while a fetch was in flight around table recovery (faust-streaming issues #216/#221). The
jump then looks like a gap, is acknowledged and committed: the documents are lost. We saw it happen:
a worker restarted after SIGKILL skipped 6-7 records on each of its 4 input partitions.

The guard: on such a jump, seek back to the first missing offset once and drop what this fetch
still holds for that partition. If the records come back, they are delivered in order; if the
same jump comes back, it is a real gap (a compacted topic) and Faust's own handling applies.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from faust.transport.consumer import Consumer

log = logging.getLogger("dedup.offsets")

_ORIGINAL_GETMANY = Consumer.getmany


async def _getmany(self: Any, timeout: float) -> AsyncIterator[tuple[Any, Any]]:
    retried: dict[Any, int] = self.__dict__.setdefault("_dedup_gap_retried", {})  # tp -> first missing
    sought: set[Any] = set()  # partitions sought back during this fetch: the rest of it is stale
    acks_enabled_for = self.app.topics.acks_enabled_for
    async for tp, message in _ORIGINAL_GETMANY(self, timeout):
        if tp in sought:
            continue
        last = self._read_offset.get(tp)  # offset of the last record delivered (Faust's bookkeeping)
        if last is not None and message.offset - last > 1 and acks_enabled_for(tp.topic):
            missing = last + 1
            if retried.get(tp) != missing:
                retried[tp] = missing
                sought.add(tp)
                log.warning("%s[%d]: offsets %d..%d were fetched but not delivered; fetching them again",
                            tp.topic, tp.partition, missing, message.offset - 1)
                await self._seek(tp, missing)
                continue
            log.info("%s[%d]: offsets %d..%d are absent from the log (compacted); skipping them",
                     tp.topic, tp.partition, missing, message.offset - 1)
        yield tp, message


def install_gap_guard() -> None:
    """Apply the guard to every Faust consumer in this process (idempotent)."""
    Consumer.getmany = _getmany  # type: ignore[method-assign]
