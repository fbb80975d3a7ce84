"""The offset-gap guard: a jump in delivered offsets is fetched again once, a repeated jump passes.

Faust's fetch loop is replaced by a scripted sequence of fetches (what the broker returned); the
guard under test is the real ``stream.service.offset_gaps._getmany`` and the loop around it copies
what ``Consumer._drain_messages`` does with each delivered record (``_read_offset``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from faust.types import TP as TopicPartition

from stream.service import offset_gaps

TP = TopicPartition("documents", 0)


class ScriptedConsumer:
    """Each fetch returns the records from the current position, with the given offsets missing."""

    def __init__(self, log_end: int, lost_once: set[int], compacted: set[int]) -> None:
        self.position = 0
        self.log_end = log_end
        self.lost_once = set(lost_once)  # dropped by the first fetch that holds them
        self.compacted = compacted  # never in the log
        self.seeks: list[int] = []
        self._read_offset: dict[Any, int] = {}
        self.app = SimpleNamespace(topics=SimpleNamespace(acks_enabled_for=lambda topic: True))

    async def fetch(self, _timeout: float) -> AsyncIterator[tuple[Any, Any]]:
        start, end = self.position, min(self.position + 5, self.log_end)
        self.position = end
        for offset in range(start, end):
            if offset in self.compacted:
                continue
            if offset in self.lost_once:
                self.lost_once.discard(offset)
                continue
            yield TP, SimpleNamespace(offset=offset)

    async def _seek(self, _tp: Any, offset: int) -> None:
        self.seeks.append(offset)
        self.position = offset


def drain(consumer: ScriptedConsumer, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    monkeypatch.setattr(offset_gaps, "_ORIGINAL_GETMANY", lambda self, timeout: self.fetch(timeout))

    async def run() -> list[int]:
        delivered: list[int] = []
        for _ in range(20):
            async for tp, message in offset_gaps._getmany(consumer, 1.0):
                delivered.append(message.offset)
                consumer._read_offset[tp] = message.offset
        return delivered

    return asyncio.run(run())


def test_records_dropped_by_a_fetch_are_fetched_again_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = ScriptedConsumer(log_end=15, lost_once={6, 7}, compacted=set())
    assert drain(consumer, monkeypatch) == list(range(15))
    assert consumer.seeks == [6]


def test_a_real_gap_in_a_compacted_topic_is_accepted_after_one_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = ScriptedConsumer(log_end=15, lost_once=set(), compacted={6, 7, 8})
    assert drain(consumer, monkeypatch) == [o for o in range(15) if o not in {6, 7, 8}]
    assert consumer.seeks == [6]
