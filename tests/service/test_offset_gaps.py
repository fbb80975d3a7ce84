"""The offset-gap guard: records fetched but not delivered are fetched again; a real gap passes.

Faust's fetch and its delivery to streams are replaced by a scripted broker log and a loop that does
what ``Consumer._drain_messages`` does (deliver through ``consumer.callback``, record the read
offset even when the delivery was cancelled). The guard under test is the real code in
``stream.service.runtime.patches.offset_gaps``: the delivery-callback wrapper and the ``getmany`` wrapper.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from faust.types import TP as TopicPartition

from stream.service.runtime.ledger import InputLedger
from stream.service.runtime.patches import offset_gaps

TP = TopicPartition("documents", 0)


class ScriptedConsumer:
    """A partition of ``log_end`` records read 5 per fetch, with scripted losses."""

    def __init__(self, log_end: int, dropped_once: frozenset[int] = frozenset(),
                 cancelled_once: frozenset[int] = frozenset(), compacted: frozenset[int] = frozenset()) -> None:
        self.position = 0
        self.log_end = log_end
        self.dropped_once = set(dropped_once)  # fetched, never yielded by getmany (position moved on)
        self.cancelled_once = set(cancelled_once)  # yielded, delivery cancelled by a flow suspension
        self.compacted = compacted  # never in the log
        self.seeks: list[int] = []
        self.streamed: list[int] = []
        self._read_offset: dict[Any, int] = {}
        self._committed_offset: dict[Any, int] = {TP: 0}  # where reading starts after the assignment
        self._acked: dict[Any, list[int]] = {}  # commit bookkeeping the stall check reads: nothing stalls here
        self.app = SimpleNamespace(topics=SimpleNamespace(acks_enabled_for=lambda topic: True))

    async def fetch(self, _timeout: float) -> AsyncIterator[tuple[Any, Any]]:
        start, end = self.position, min(self.position + 5, self.log_end)
        self.position = end
        for offset in range(start, end):
            if offset in self.compacted:
                continue
            if offset in self.dropped_once:
                self.dropped_once.discard(offset)
                continue
            yield TP, SimpleNamespace(tp=TP, offset=offset)

    async def deliver(self, message: Any) -> None:
        if message.offset in self.cancelled_once:
            self.cancelled_once.discard(message.offset)
            raise asyncio.CancelledError
        self.streamed.append(message.offset)

    async def _seek(self, _tp: Any, offset: int) -> None:
        self.seeks.append(offset)
        self.position = offset

    def assignment(self) -> set[Any]:
        return {TP}


def run(consumer: ScriptedConsumer, monkeypatch: pytest.MonkeyPatch, await_seconds: float = 0.0) -> list[int]:
    # the scripted log has no stale fetches unless a test adds them: no waiting after a seek
    monkeypatch.setattr(offset_gaps, "AWAIT_SECONDS", await_seconds)
    monkeypatch.setattr(offset_gaps, "_ORIGINAL_GETMANY", lambda self, timeout: self.fetch(timeout))
    monkeypatch.setattr(offset_gaps, "_ORIGINAL_INIT", lambda self: setattr(self, "callback", self.deliver))
    offset_gaps._init(consumer)

    async def drain() -> None:
        for _ in range(30):
            async for tp, message in offset_gaps._getmany(consumer, 1.0):
                last = consumer._read_offset.get(tp)
                if last is not None and message.offset < last:
                    continue  # Faust drops records below its read offset
                # Faust's wait_first(callback, suspend_flow) may give up on a delivery...
                with contextlib.suppress(asyncio.CancelledError):
                    await consumer.callback(message)  # type: ignore[attr-defined]
                consumer._read_offset[tp] = message.offset  # ...and records it as read all the same

    asyncio.run(drain())
    return consumer.streamed


def test_records_dropped_by_a_fetch_are_fetched_again_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = ScriptedConsumer(log_end=15, dropped_once=frozenset({6, 7}))
    assert run(consumer, monkeypatch) == list(range(15))
    assert consumer.seeks == [6]


def test_a_record_whose_delivery_was_cancelled_is_fetched_again(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = ScriptedConsumer(log_end=15, cancelled_once=frozenset({9}))
    assert run(consumer, monkeypatch) == list(range(15))
    assert consumer.seeks == [9]


def test_a_real_gap_in_a_compacted_topic_is_accepted_after_one_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = ScriptedConsumer(log_end=15, compacted=frozenset({6, 7, 8}))
    assert run(consumer, monkeypatch) == [o for o in range(15) if o not in {6, 7, 8}]
    assert consumer.seeks == [6]


def test_records_dropped_before_anything_was_delivered_are_fetched_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Right after an assignment (the recovery race): the jump is measured from the committed offset."""
    consumer = ScriptedConsumer(log_end=12, dropped_once=frozenset({0, 1, 2}))
    assert run(consumer, monkeypatch) == list(range(12))
    assert consumer.seeks == [0]


def commit_state(committed: int, acked: list[int]) -> Any:
    """The bookkeeping Faust's commit reads (Consumer._acked, _acked_index, _committed_offset, _gap)."""
    from collections import defaultdict

    from intervaltree import IntervalTree

    state = SimpleNamespace(_acked=defaultdict(list), _acked_index=defaultdict(set),
                            _committed_offset=defaultdict(lambda: None), _gap=defaultdict(IntervalTree),
                            _unacked_messages=set(), seeks=[], _read_offset={})
    state._acked[TP] = list(acked)
    state._acked_index[TP] = set(acked)
    state._committed_offset[TP] = committed
    return state


def test_no_commit_past_an_unacknowledged_record_at_the_committed_offset() -> None:
    # Faust's own check: min(acked) - committed > 1 -> one missing record slips through
    assert offset_gaps._ORIGINAL_NEW_OFFSET(commit_state(5, [6, 7, 8]), TP) == 9
    assert offset_gaps._new_offset(commit_state(5, [6, 7, 8]), TP) is None
    assert offset_gaps._new_offset(commit_state(5, [5, 6, 7]), TP) == 8
    compacted = commit_state(5, [6, 7, 8])
    compacted._gap[TP].addi(5, 6)  # offset 5 is absent from the log: Faust's gap handling decides
    assert offset_gaps._new_offset(compacted, TP) == 9


def test_a_stalled_partition_is_sought_back_to_its_committed_offset() -> None:
    def check(held: list[int]) -> list[int]:
        state = commit_state(5, [8, 9])  # 5 (the committed offset) is not acked, 8 and 9 are
        state._unacked_messages = [SimpleNamespace(tp=TP, offset=o) for o in held]  # held by a stream

        async def seek(tp: Any, offset: int) -> None:
            state.seeks.append(offset)

        state._seek, state.assignment = seek, lambda: {TP}
        delivered: dict[Any, int] = {TP: 9}
        asyncio.run(offset_gaps._rewind_stalled(state, delivered, {}))
        assert delivered[TP] == (4 if state.seeks else 9)
        return list(state.seeks)

    assert check(held=[]) == [5]  # nobody holds 5..7: delivered but never processed -> fetch again
    assert check(held=[5]) == []  # 5 is being processed: not stalled
    assert check(held=[6]) == []  # 6 is in progress: wait, decide on a later fetch


def test_no_rewind_while_a_commit_is_in_flight() -> None:
    # Faust's _new_offset took 5..7 out of _acked for a commit of 8 that has not returned yet, and 8
    # and 9 were acked since: 5 looks unacknowledged but is not
    state = commit_state(5, [8, 9])

    async def seek(tp: Any, offset: int) -> None:
        state.seeks.append(offset)

    async def slow_commit(self: Any, offsets: Any) -> bool:
        await offset_gaps._rewind_stalled(state, {TP: 9}, {})  # a fetch runs during the round trip
        return True

    state._seek, state.assignment = seek, lambda: {TP}
    original = offset_gaps._ORIGINAL_COMMIT_OFFSETS
    offset_gaps._ORIGINAL_COMMIT_OFFSETS = slow_commit  # type: ignore[assignment]
    try:
        asyncio.run(offset_gaps._commit_offsets(state, {TP: 8}))
    finally:
        offset_gaps._ORIGINAL_COMMIT_OFFSETS = original  # type: ignore[assignment]
    assert state.seeks == []
    assert offset_gaps._committing(state) == {}
    asyncio.run(offset_gaps._rewind_stalled(state, {TP: 9}, {}))  # without the commit in flight: stalled
    assert state.seeks == [5]


def test_a_ledger_seek_mid_fetch_reads_the_partition_again_from_the_requested_offset(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The agent finds offsets 3..6 skipped while it handles offset 7 (fetched as 5..9): the rest of
    # that fetch (8, 9) must not move the read offset on, or the re-read 3.. would be dropped.
    consumer = ScriptedConsumer(log_end=12)
    deliver = consumer.deliver
    asked = []

    async def deliver_and_ask(message: Any) -> None:
        await deliver(message)
        if message.offset == 7 and not asked:
            asked.append(7)
            offset_gaps.request_seek(consumer, TP, 3)

    consumer.deliver = deliver_and_ask  # type: ignore[method-assign]
    assert run(consumer, monkeypatch) == list(range(8)) + list(range(3, 12))
    assert consumer.seeks == [3]


def test_records_fetched_before_a_seek_are_not_taken_for_another_gap(monkeypatch: pytest.MonkeyPatch) -> None:
    # After the seek back to 6, one more fetch still holds 10..12 from before it (aiokafka had it
    # in flight). Taken as "6..9 fetched but not delivered" again, the second time it would pass as
    # a compaction gap and 6..9 would be lost; the guard instead reads again from 6.
    consumer = ScriptedConsumer(log_end=15, dropped_once=frozenset({5, 6, 7, 8, 9}))
    fetch = consumer.fetch
    stale = [10, 11, 12]

    async def fetch_with_a_stale_batch(timeout: float) -> AsyncIterator[tuple[Any, Any]]:
        if consumer.seeks and stale:
            for offset in stale:
                yield TP, SimpleNamespace(tp=TP, offset=offset)
            stale.clear()
            return
        async for item in fetch(timeout):
            yield item

    consumer.fetch = fetch_with_a_stale_batch  # type: ignore[method-assign]
    assert run(consumer, monkeypatch, await_seconds=60.0) == list(range(15))


def test_a_lost_tail_is_found_by_the_ledger_and_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # the last record's delivery is cancelled: no later record reveals it to the guard
    consumer = ScriptedConsumer(log_end=12, cancelled_once=frozenset({11}))
    consumer.highwater = lambda tp: consumer.log_end  # type: ignore[attr-defined]
    assert run(consumer, monkeypatch) == list(range(11))
    assert consumer.seeks == []
    now = [0.0]
    ledger = InputLedger(lambda tp: None, idle_after=5.0, clock=lambda: now[0])
    ledger.admit([((TP.topic, TP.partition), o) for o in consumer.streamed])
    ledger.delivered()
    assert offset_gaps.known_ends(consumer, "documents") == ({("documents", 0): 12}, {("documents", 0): 12})
    assert offset_gaps.known_ends(consumer, "other") == ({}, {})
    now[0] = 6.0
    assert ledger.stalled(*offset_gaps.known_ends(consumer, "documents")) == {}  # first seen behind now
    now[0] = 12.0
    for (topic, partition), offset in ledger.stalled(*offset_gaps.known_ends(consumer, "documents")).items():
        offset_gaps.request_seek(consumer, TopicPartition(topic, partition), offset)
    assert run(consumer, monkeypatch) == list(range(12))
    assert consumer.seeks == [11]
