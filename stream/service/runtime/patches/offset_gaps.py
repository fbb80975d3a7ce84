"""Never let Faust commit past records it fetched but did not deliver to a stream.

Two places in Faust's fetch loop (``Consumer._drain_messages`` / ``getmany``) lose records around
a flow suspension (table recovery, rebalance; faust-streaming issues
https://github.com/faust-streaming/faust/issues/216 and /221):
- ``getmany`` stops yielding, or skips partitions paused while a fetch was in flight, and the
  consumer position has already moved past those records;
- the record in flight when the flow is suspended has its delivery cancelled, yet its offset is
  recorded as read.
The fetch loop then sees a jump in offsets, takes it for a compaction gap and acknowledges the
missing offsets (or, for one record, its commit check is off by one), so they are committed unread.
We saw it after a SIGKILL restart: 1 to 14 records per input partition never reached the agent.

Two more ways a record can go missing after it was delivered to a stream (e.g. its channel queue
cleared by a flow suspension): Faust's commit check (``Consumer._new_offset``,
https://github.com/faust-streaming/faust/blob/v0.15.2/faust/transport/consumer.py#L1097; issues
https://github.com/faust-streaming/faust/issues/312 and /606) lets one unacknowledged record at the
committed offset pass (``min(acked) - committed > 1``: off by one), and several stall the commits for
good, since nothing reads them again. ``_new_offset`` refuses to commit past an unacknowledged record
at the committed offset (unless Faust recorded it as a compaction gap), and ``_rewind_stalled`` seeks
a partition back to its committed offset when that record is neither acknowledged nor held by any
stream while later ones are acknowledged.

The guard records the last offset actually delivered per partition (by wrapping the consumer's
delivery callback; right after an assignment, the committed offset reading starts from). When a
fetched record lies beyond that + 1, it seeks back to the first
undelivered offset once and drops what that fetch still holds for the partition. If the same jump
comes back, it is a real gap (a compacted topic) and Faust's own handling applies.

Patched: ``faust.transport.consumer.Consumer.__init__`` (wraps the delivery callback), ``getmany``,
``on_partitions_revoked``, ``_new_offset`` and ``_commit_offsets``; reads and writes the consumer's
``_read_offset``, ``_acked``, ``_committed_offset``, ``_gap``, ``_unacked_messages`` and calls
``_seek``. Checked against faust-streaming 0.15.3 (``faust/transport/consumer.py`` is the same from
0.14.1) and aiokafka 0.14.0.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from faust.transport.consumer import Consumer

from stream.service.runtime.patches.target import Patch, Read, apply

log = logging.getLogger("dedup.offsets")

_ORIGINAL_INIT = Consumer.__init__
_ORIGINAL_GETMANY = Consumer.getmany
_ORIGINAL_REVOKED = Consumer.on_partitions_revoked
_ORIGINAL_NEW_OFFSET = Consumer._new_offset
_ORIGINAL_COMMIT_OFFSETS = Consumer._commit_offsets


def _delivered(consumer: Any) -> dict[Any, int]:
    """tp -> offset of the last record handed to the streams (survives only while assigned)."""
    return consumer.__dict__.setdefault("_dedup_delivered", {})


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    _ORIGINAL_INIT(self, *args, **kwargs)
    deliver: Callable[[Any], Awaitable[None]] = self.callback
    delivered = _delivered(self)

    async def callback(message: Any) -> None:
        await deliver(message)  # cancelled when the flow is suspended: then not delivered
        delivered[message.tp] = message.offset

    self.callback = callback


def _committing(consumer: Any) -> dict[Any, int]:
    """tp -> offset of a commit in flight (see ``_commit_offsets``)."""
    return consumer.__dict__.setdefault("_dedup_committing", {})


async def _commit_offsets(self: Any, offsets: Any, *args: Any, **kwargs: Any) -> bool:
    # Faust's ``_new_offset`` removes the acked offsets from ``_acked`` before the commit's network
    # round trip and updates ``_committed_offset`` only after it. In between, later acks make the
    # committed offset look unacknowledged: the stall check sought back healthy partitions (seen at
    # 50 docs/s: a rewind every few seconds, each a ~1 s stall and a re-processed backlog).
    committing = _committing(self)
    committing.update(offsets)
    try:
        done: bool = await _ORIGINAL_COMMIT_OFFSETS(self, offsets, *args, **kwargs)
        return done
    finally:
        for tp, offset in offsets.items():
            if committing.get(tp) == offset:
                del committing[tp]


def _head_missing(self: Any, tp: Any) -> int | None:
    """The committed offset of ``tp`` if its record is not acknowledged but a later one is."""
    acked = self._acked.get(tp)
    committed = self._committed_offset.get(tp)
    in_flight = _committing(self).get(tp)
    if in_flight is not None and (committed is None or in_flight > committed):
        committed = in_flight  # everything below it was acknowledged
    if not acked or committed is None or min(acked) <= committed:
        return None
    if self._gap[tp].overlaps_point(committed):  # absent from the log: Faust's gap handling applies
        return None
    return int(committed)


def _new_offset(self: Any, tp: Any) -> int | None:
    if _head_missing(self, tp) is not None:
        return None  # Faust's own check lets exactly one missing record through
    offset: int | None = _ORIGINAL_NEW_OFFSET(self, tp)
    return offset


async def _rewind_stalled(self: Any, delivered: dict[Any, int], retried: dict[Any, int]) -> None:
    """``retried``: tp -> the committed offset this partition was last sought back to."""
    for tp in list(self._acked):
        head = _head_missing(self, tp)
        if head is None or retried.get(tp) == head or tp not in self.assignment():
            continue
        first_acked = min(self._acked[tp])
        if any(m.tp == tp and head <= m.offset < first_acked for m in list(self._unacked_messages)):
            continue  # still held by a stream: not stalled, just in progress
        retried[tp] = head
        log.warning("%s[%d]: offsets from %d were delivered but never processed; fetching them again",
                    tp.topic, tp.partition, head)
        await _apply_seek(self, tp, head, delivered, None)


def _seek_requests(consumer: Any) -> dict[Any, int]:
    return consumer.__dict__.setdefault("_dedup_seek_requests", {})


def request_seek(consumer: Any, tp: Any, offset: int) -> None:
    """Have the fetch loop read ``tp`` again from ``offset`` (for the input ledger, ``runtime/ledger.py``).

    Not ``Consumer.seek``: the fetch loop may be in the middle of a fetch of that partition, and
    the rest of that fetch would move Faust's read offset past ``offset`` again, after which Faust
    drops the re-fetched records as already read (seen: a partition's whole tail lost that way).
    """
    _seek_requests(consumer)[tp] = offset


def known_ends(consumer: Any, topic: str) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]:
    """Per assigned partition of ``topic`` (for ``InputLedger.stalled``): an offset up to which records
    are known to exist (past what the fetch loop read, and below the broker's high watermark: on tansu
    the base offset of the last record batch + 1, a lower bound, which is safe here), and the offset
    past what the fetch loop read alone."""
    ends, fetched = {}, {}
    for tp in consumer.assignment():
        if tp.topic != topic:
            continue
        read = consumer._read_offset.get(tp)
        try:
            highwater = consumer.highwater(tp) or 0
        except AssertionError:  # aiokafka: revoked since (its thread rebalances on its own)
            continue
        end = max(read + 1 if read is not None else 0, highwater)
        if end:
            ends[(tp.topic, tp.partition)] = end
            fetched[(tp.topic, tp.partition)] = read + 1 if read is not None else 0
    return ends, fetched


AWAIT_SECONDS = 3.0  # after a seek, how long records past its offset count as fetched before it


def _awaiting(consumer: Any) -> dict[Any, tuple[int, float]]:
    """tp -> (offset sought, until when later records are taken as stale)."""
    return consumer.__dict__.setdefault("_dedup_awaiting", {})


async def _apply_seek(self: Any, tp: Any, offset: int, delivered: dict[Any, int], sought: set[Any] | None) -> None:
    """Every seek of the guard and the ledger. ``sought``: the partitions of the fetch being read,
    None between fetches (the next fetch reads from the new position)."""
    await self._seek(tp, offset)
    self._read_offset[tp] = offset - 1 if offset > 0 else None  # Faust drops records below it
    delivered[tp] = offset - 1
    if sought is not None:
        sought.add(tp)  # the rest of this fetch for tp is stale
    # and so may be records of later fetches (seen: the guard took such a record for a second gap,
    # then for compaction, and Faust dropped the re-fetched records as already read)
    _awaiting(self)[tp] = (offset, time.monotonic() + AWAIT_SECONDS)


async def _apply_requests(self: Any, requests: dict[Any, int], delivered: dict[Any, int],
                          sought: set[Any] | None) -> None:
    if not requests:
        return
    assigned = self.assignment()
    for tp in list(requests):
        offset = requests.pop(tp)
        if tp in assigned:
            log.info("%s[%d]: reading again from offset %d (input ledger)", tp.topic, tp.partition, offset)
            await _apply_seek(self, tp, offset, delivered, sought)


async def _getmany(self: Any, timeout: float) -> AsyncIterator[tuple[Any, Any]]:
    delivered = _delivered(self)
    requests, awaiting = _seek_requests(self), _awaiting(self)
    retried: dict[Any, int] = self.__dict__.setdefault("_dedup_gap_retried", {})  # tp -> first missing
    sought: set[Any] = set()  # partitions sought back during this fetch: the rest of it is stale
    acks_enabled_for = self.app.topics.acks_enabled_for
    await _rewind_stalled(self, delivered, self.__dict__.setdefault("_dedup_stall_retried", {}))
    await _apply_requests(self, requests, delivered, None)
    async for tp, message in _ORIGINAL_GETMANY(self, timeout):
        if requests:  # asked for while this fetch was being read
            await _apply_requests(self, requests, delivered, sought)
        if tp in sought:
            continue
        wait = awaiting.get(tp)
        if wait is not None:
            if message.offset == wait[0] or time.monotonic() > wait[1]:
                del awaiting[tp]  # the sought record came (or never will: the check below decides)
            elif message.offset > wait[0]:
                # fetched before the seek: read again from the sought offset, so that the position
                # never moves past records left out here
                await self._seek(tp, wait[0])
                sought.add(tp)
                continue
        last = delivered.get(tp)
        if last is None:  # nothing delivered since the assignment: reading starts at the committed offset
            committed = self._committed_offset.get(tp)
            last = committed - 1 if committed is not None else None
        if last is not None and message.offset > last + 1 and acks_enabled_for(tp.topic):
            missing = last + 1
            if retried.get(tp) != missing:
                retried[tp] = missing
                sought.add(tp)
                log.warning("%s[%d]: offsets %d..%d were fetched but not delivered; fetching them again",
                            tp.topic, tp.partition, missing, message.offset - 1)
                await _apply_seek(self, tp, missing, delivered, sought)
                continue
            log.info("%s[%d]: offsets %d..%d are absent from the log (compacted); skipping them",
                     tp.topic, tp.partition, missing, message.offset - 1)
        yield tp, message


async def _on_partitions_revoked(self: Any, revoked: Any) -> None:
    delivered, requests = _delivered(self), _seek_requests(self)
    for tp in revoked:  # whoever gets the partition next starts from the committed offset
        delivered.pop(tp, None)
        requests.pop(tp, None)
        _awaiting(self).pop(tp, None)
    await _ORIGINAL_REVOKED(self, revoked)


PATCHES = (
    Patch(Consumer, "__init__", _init),
    Patch(Consumer, "getmany", _getmany),
    Patch(Consumer, "on_partitions_revoked", _on_partitions_revoked),
    Patch(Consumer, "_new_offset", _new_offset),
    Patch(Consumer, "_commit_offsets", _commit_offsets),
)
READS = tuple(Read(Consumer, name) for name in
              ("_read_offset", "_acked", "_committed_offset", "_gap", "_unacked_messages", "_seek"))


def install_gap_guard() -> None:
    """Apply the guard to every Faust consumer created in this process from now on (idempotent)."""
    apply(PATCHES)
