"""Input ledger: per input partition, the offset after the last record an agent processed.

Faust decides what to commit from what its streams acknowledged, and around restarts and
rebalances it has acknowledged records that never reached an agent (docs/service.md, "Delivery
guarantees"); a committed offset past them loses them for good. The ledger does not depend on
that: the worker keeps each agent's position per input partition in its own state table (with a
changelog, like the block table), and checks every batch against it. A partition delivers its
records in offset order, so a record past the position means the ones between were skipped: the
agent seeks back to the position and leaves out the records it would otherwise process out of turn.

A position is written into the output of the agent's *next* batch, after the batch it describes was
delivered: a crash mid-flush never leaves a position ahead of delivered effects. A stored position
may lag (it only makes the agent read again what it already processed, which is idempotent), so
with ``save_every`` it is written at most that often per partition, not with every batch: after a
crash or a hand-over up to ``save_every`` seconds of a partition's input are processed again.

A gap that survives ``max_attempts`` seeks is accepted with a warning: on a compacted topic or past
the retention limit those records no longer exist.

A gap at a partition's tail brings no later record to reveal it. ``stalled`` covers that: a
partition whose records exist past the position (the fetch loop read them, or the broker has them)
is sought back to its position like a gap once the whole agent received nothing for ``idle_after``
seconds (the common case: the tail of a burst lost; a batch still being handled or delivered, which
takes over 5 s on a loaded machine, is not idleness). A partition silent alone while the agent is busy
is sought back after ``stall_after`` only if the fetch loop read past its position and none of those
records is still held by the streams (in a channel's buffer or taken by a stream): records the broker
has but nobody fetched are a backlog, and fetched ones in the buffer are waiting their turn (in a deep
backlog a partition can wait minutes behind the others' whole producer batches), not lost. Both
count from the later of the partition's last delivery and the first check that saw it behind: a
record that just arrived after a quiet spell is on its way, not lost. A partition that has delivered
nothing since its assignment is behind from its stored position, not from the group's committed
offset: after a rebalance, Faust can leave a partition's fetch position at its end while the records
it fetched before seeking to the committed offset were dropped (seen: 27 of 400 documents never
judged after a worker left, the partition silent for minutes), and it commits past records it never
delivered (seen after a SIGKILL: 1,421 documents at a partition's tail, committed, never judged, no
later record to reveal them). A group with nothing stored and nothing committed (a new deployment)
has no position to compare with: the worker asks the broker where reading began (``start``) before it
admits a partition's first batch, so that a lost first record is a gap too.
Pure logic; the agent does the seeking and writing.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

log = logging.getLogger("dedup.ledger")

TP = tuple[str, int]  # (topic, partition)
KEY_PREFIX = b"\xff\xfeledger:"  # no UTF-8 doc id key can start with 0xFF 0xFE


def ledger_key(topic: str) -> bytes:
    """The state-table key of a topic's position (the table partition is the input partition)."""
    return KEY_PREFIX + topic.encode()


def encode_position(offset: int) -> bytes:
    return offset.to_bytes(8, "big")


def decode_position(raw: bytes | None) -> int | None:
    return int.from_bytes(raw, "big") if raw else None


@dataclass
class _Seek:
    offset: int
    since: float
    attempts: int


class InputLedger:
    """Positions of one agent's input partitions; ``load(tp)`` reads a stored position (or None)."""

    def __init__(self, load: Callable[[TP], int | None], *, retry_after: float = 10.0, max_attempts: int = 5,
                 save_every: float = 0.0, idle_after: float = 5.0, stall_after: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._load = load
        self._idle_after, self._stall_after = idle_after, stall_after
        self._last_batch = -math.inf  # when the agent last received records or finished a batch
        self._in_batch = False  # a batch is being handled or delivered: the agent is not idle
        self._active: dict[TP, float] = {}  # when the partition last delivered a record (or was sought)
        # when a check first saw the partition behind its end (a later delivery moves _active past it)
        self._behind: dict[TP, float] = {}
        self._save_every = save_every
        self._saved_at: dict[TP, float] = {}  # when a position of the partition was last written
        self._retry_after = retry_after
        self._max_attempts = max_attempts
        self._clock = clock
        self._next: dict[TP, int | None] = {}  # None: no position stored yet (accept what comes)
        # where the consumer began reading a partition with no stored position, once the broker said
        # (the group's committed offset, else the log's first): a first record past it is a gap too
        self._starts: dict[TP, int] = {}
        self._seeking: dict[TP, _Seek] = {}
        self._admitted: dict[TP, int] = {}  # positions after the batch being handled
        self._unsaved: dict[TP, int] = {}  # delivered positions not yet written
        self._writing: dict[TP, int] = {}  # written into the batch being handled
        self.gaps_found = 0
        self.gaps_accepted = 0
        self.stalls_found = 0

    def admit(self, records: Sequence[tuple[TP, int]]) -> tuple[list[bool], dict[TP, int]]:
        """For each (partition, offset) of a batch, in order: process it? And where to seek."""
        keep: list[bool] = []
        seeks: dict[TP, int] = {}
        now = self._clock()
        if records:
            self._last_batch, self._in_batch = now, True
        for tp, offset in records:
            self._active[tp] = now
            expected = self._known(tp)
            if expected is None or offset <= expected or self._accept(tp, expected, offset, now, seeks):
                # offset < expected: a redelivery of a processed record (idempotent, processed again)
                if expected is None or offset >= expected:
                    self._next[tp] = offset + 1
                    self._admitted[tp] = offset + 1
                if self._seeking.get(tp) and offset >= self._seeking[tp].offset:
                    del self._seeking[tp]
                keep.append(True)
            else:
                keep.append(False)
        return keep, seeks

    def _accept(self, tp: TP, expected: int, offset: int, now: float, seeks: dict[TP, int]) -> bool:
        """A record past the position: False (leave it out, maybe seek back) or True (accept the gap)."""
        seek = self._seeking.get(tp)
        if seek is None or seek.offset != expected:
            self.gaps_found += 1
            log.warning("%s[%d]: offsets %d..%d were skipped before this worker processed them; "
                        "fetching them again", tp[0], tp[1], expected, offset - 1)
            self._seeking[tp] = _Seek(expected, now, 1)
            seeks[tp] = expected
            return False
        if now - seek.since < self._retry_after:
            return False  # records fetched before the seek, still in the stream's buffer
        if seek.attempts < self._max_attempts:
            seeks[tp] = self._again(seek, now)
            return False
        self.gaps_accepted += 1
        log.warning("%s[%d]: offsets %d..%d did not arrive after %d seeks; accepting the gap (a compacted "
                    "topic, or records past the retention limit)", tp[0], tp[1], expected, offset - 1,
                    seek.attempts)
        del self._seeking[tp]
        return True

    def unstarted(self, tps: Iterable[TP]) -> list[TP]:
        """Of ``tps``, those with nothing processed since the assignment and no known start."""
        return [tp for tp in tps if self._known(tp) is None and tp not in self._starts]

    def start(self, tp: TP, offset: int) -> None:
        """The consumer began reading ``tp`` at ``offset`` (the broker's answer for a partition with no
        stored position): the first record must be that one."""
        self._starts[tp] = offset

    def position(self, tp: TP) -> int | None:
        """The offset after the last record of ``tp`` processed, or, none yet since it was assigned, its
        stored position or the broker's start (None: none known)."""
        return self._known(tp)

    def _known(self, tp: TP) -> int | None:
        """``tp``'s position; with nothing processed since the assignment, read from the store (then
        from where the broker says reading began). Unknown is asked again next time."""
        if self._next.get(tp) is None:
            stored = self._load(tp)
            self._next[tp] = stored if stored is not None else self._starts.get(tp)
        return self._next[tp]

    def due(self) -> dict[TP, int]:
        """Seeks to repeat now: gaps still open after ``retry_after``. Called on a timer, since a
        partition whose records all arrived (and were left out) before the re-read brings no event
        that would repeat the seek."""
        now = self._clock()
        return {tp: self._again(seek, now) for tp, seek in self._seeking.items()
                if now - seek.since >= self._retry_after and seek.attempts < self._max_attempts}

    def stalled(self, ends: Mapping[TP, int], fetched: Mapping[TP, int] | None = None,
                committed: Mapping[TP, int | None] | None = None,
                held: Mapping[TP, int] | None = None) -> dict[TP, int]:
        """Seeks for partitions that stopped delivering. ``ends``: per assigned partition, an offset
        up to which records are known to exist (the fetch loop's read offset + 1, the broker's high
        watermark); ``fetched``: the fetch loop's read offset + 1 alone (default: ``ends``);
        ``committed``: the group's committed offsets, the position of a partition with nothing
        processed since its assignment when neither a stored position nor the broker's start is
        known (its whole backlog can be lost that way); ``held``:
        the highest offset handed to the streams and not yet acknowledged (a partition with one at or
        past its position is waiting its turn in the stream's buffer, not lost). Called on a timer: a
        lost tail leaves the partition silent, not gapped."""
        now = self._clock()
        fetched = ends if fetched is None else fetched
        committed = committed or {}
        held = held or {}
        seeks = {}
        for tp, end in ends.items():
            # the stored position, not the committed offset, says what was processed: Faust commits
            # past records it never delivered, and at a partition's tail no later record shows the gap
            position = self._known(tp)
            if position is None:
                position = committed.get(tp)
            if position is None or position >= end or tp in self._seeking:
                self._behind.pop(tp, None)
                continue
            silent = now - max(self._active.setdefault(tp, now), self._behind.setdefault(tp, now))
            agent_idle = (silent >= self._idle_after and not self._in_batch
                          and now - self._last_batch >= self._idle_after)
            lost_fetch = (silent >= self._stall_after and fetched.get(tp, 0) > position
                          and held.get(tp, -1) < position)
            if not (agent_idle or lost_fetch):
                continue
            self.stalls_found += 1
            log.warning("%s[%d]: offsets %d..%d exist but nothing was delivered for %.0f s; fetching them "
                        "again", tp[0], tp[1], position, end - 1, silent)
            self._seeking[tp] = _Seek(position, now, 1)
            self._active[tp] = now
            seeks[tp] = position
        return seeks

    @staticmethod
    def _again(seek: _Seek, now: float) -> int:
        """Count one more seek to ``seek.offset`` (made now); returns the offset."""
        seek.attempts += 1
        seek.since = now
        return seek.offset

    def to_write(self) -> dict[TP, int]:
        """Positions to write with the batch about to be handled: those of delivered batches, of
        partitions whose position was last written ``save_every`` or more seconds ago."""
        now = self._clock()
        due = {tp: pos for tp, pos in self._unsaved.items()
               if now - self._saved_at.get(tp, -math.inf) >= self._save_every}
        for tp in due:
            del self._unsaved[tp]
            self._saved_at[tp] = now
        self._writing = due
        return dict(due)

    def delivered(self) -> None:
        """The batch's output (its records' effects and the positions it wrote) was delivered."""
        self._in_batch, self._last_batch = False, self._clock()
        self._writing = {}
        self._unsaved.update(self._admitted)
        self._admitted = {}

    def forget(self, tps: Iterable[TP]) -> None:
        """Partitions revoked: another worker may move them on; reload if they come back."""
        for tp in tps:
            for d in (self._next, self._seeking, self._admitted, self._unsaved, self._writing, self._saved_at,
                      self._active, self._behind, self._starts):
                d.pop(tp, None)
