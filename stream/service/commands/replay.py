"""``dedup dlq replay``: the selected dead letters' original key and value back on the documents topic,
each letter once, recorded in a shared, durable ledger.

The ledger is a compacted topic (``{dlq}.replayed``, topology/topics.yaml) keyed by the letter's
position in the dead-letter topic (``partition:offset``). Each record holds the letter's SHA-256 (a
letter at a reused position, after the dead-letter topic was re-created, is another letter), where
its original went, when, by whom and how many times. Kafka is the one store every operator and
machine already shares, and compaction keeps one record per letter, so the ledger is as small as the
dead-letter topic and as durable as the rest of the deployment.

Order of writes: the original first, its ledger record from the original's delivery report. A replay
stopped between the two leaves the letter unmarked and a later replay sends it again: at least once,
like the rest of the service (the worker judges the second copy as a later record of the same id).
"""

from __future__ import annotations

import getpass
import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stream.service.commands.letters import (
    NOT_AN_ENVELOPE,
    DeadLetter,
    Original,
    Position,
    read_letters,
    read_record,
    read_topic,
)
from stream.service.settings import Settings

LEDGER_ROLE = "replay-ledger"
REPLAY_HEADER = "dedup-replay-of"  # on a replayed record: the letter it came from (dlq-topic:partition:offset)


def ledger_topic(settings: Settings) -> str:
    return settings.topology().by_role(LEDGER_ROLE)[0].name


@dataclass
class Ledger:
    """The latest ledger record per letter (``partition:offset`` in the dead-letter topic)."""

    entries: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # where each replayed original went: a dead letter of that record is the same original failing again
        self._targets = {(to["topic"], to["partition"], to["offset"]): name
                         for name, e in self.entries.items() for to in e.get("targets", ())}

    def replay(self, letter: DeadLetter) -> dict[str, Any] | None:
        """The ledger record of this very letter (same position and same bytes), if it was replayed."""
        entry = self.entries.get(letter.name)
        return entry if entry is not None and entry.get("sha256") == letter.digest else None

    def origin(self, letter: DeadLetter) -> str | None:
        """The letter whose replayed original this letter's source record is: the replay went to the
        dead-letter topic again (its cause is not fixed)."""
        src = letter.source
        return None if src is None else self._targets.get((src.topic, src.partition, src.offset))

    def handled(self, letter: DeadLetter) -> bool:
        """Replayed already, or the dead letter of a replay: ``--again`` replays it."""
        return self.replay(letter) is not None or self.origin(letter) is not None


def read_ledger(settings: Settings) -> Ledger:
    """The ledger (a null value forgets a letter); empty if the topic is missing."""
    entries: dict[str, dict[str, Any]] = {}
    for msg in read_topic(settings, ledger_topic(settings), missing_ok=True):
        if msg.key() is None:
            continue
        name = msg.key().decode("utf-8", "replace")
        if msg.value() is None:
            entries.pop(name, None)
        else:
            entries[name] = json.loads(msg.value())
    return Ledger(entries)


def ensure_ledger(settings: Settings) -> None:
    """Create the ledger topic if this deployment lacks it (one made before the ledger existed)."""
    from topology import Topology
    from topology.admin import apply

    topology = settings.topology()
    spec = next(t for t in topology.topics if t.role == LEDGER_ROLE)
    apply(Topology(topology.app_id, (spec,)), settings.confluent(), timeout=settings.connect_timeout)


@dataclass(frozen=True)
class Selection:
    """Which letters a command takes: by code (any of ``reasons``; none: all) and from an offset of the
    dead-letter topic on (``since``; in one partition only when ``since_partition`` is set)."""

    reasons: frozenset[str] = frozenset()
    since: int | None = None
    since_partition: int | None = None

    def __call__(self, letter: DeadLetter) -> bool:
        if self.reasons and letter.code not in self.reasons:
            return False
        if self.since is None:
            return True
        if self.since_partition is not None and letter.at.partition != self.since_partition:
            return False
        return letter.at.offset >= self.since


def operator_name() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container): the host alone
        user = "?"
    return f"{user}@{socket.gethostname()}"


@dataclass
class ReplayReport:
    replayed: list[tuple[DeadLetter, Position | None]] = field(default_factory=list)  # None: a dry run
    already: list[DeadLetter] = field(default_factory=list)
    copies: list[str] = field(default_factory=list)  # letters of an input record another letter replays
    came_back: list[DeadLetter] = field(default_factory=list)  # dead letters of replayed originals
    not_replayable: list[tuple[DeadLetter, str]] = field(default_factory=list)
    failed: list[tuple[DeadLetter, str]] = field(default_factory=list)  # not delivered
    unrecorded: list[tuple[DeadLetter, str]] = field(default_factory=list)  # delivered, ledger record not
    undelivered: int = 0  # records with no delivery report when the wait ended
    ledger: Ledger = field(default_factory=Ledger)  # as it was before this replay


class NotReplayable(Exception):
    """Why a letter's original cannot be had."""


def _whole(settings: Settings, letter: DeadLetter, part: str, original: Original) -> bytes | None:
    """``original`` whole: as the envelope holds it, or re-read from the input at the letter's source
    when the envelope holds a cut preview."""
    if not original.truncated:
        return original.data
    if letter.source is None:
        raise NotReplayable(f"the {part} was cut and the letter names no source to re-read it from")
    record = read_record(settings, letter.source)
    if record is None:
        raise NotReplayable(f"the {part} was cut to a preview and the source record {letter.source} is no longer "
                            "there")
    raw = record.value() if part == "value" else record.key()
    if not original.matches(raw):
        raise NotReplayable(f"the {part} was cut to a preview and the record at {letter.source} is not the "
                            "original (other length or SHA-256)")
    return raw


def originals(settings: Settings, letter: DeadLetter) -> tuple[bytes | None, bytes | None]:
    """The input record's key and value; ``NotReplayable`` says why they cannot be had."""
    if letter.code == NOT_AN_ENVELOPE:
        raise NotReplayable("not a dead-letter envelope: nothing to replay")
    return _whole(settings, letter, "key", letter.key), _whole(settings, letter, "value", letter.value)


class Sender:
    """Originals to the documents topic; each delivered one's ledger record after its delivery report.

    Ledger records are produced from the main loop, never inside a delivery callback: librdkafka's
    Python binding aborts the process on a poll made from inside one."""

    def __init__(self, settings: Settings, topic: str, ledger: Ledger, report: ReplayReport
                 ) -> None:
        from confluent_kafka import Producer

        # an original came through this broker once, so it accepts its size: no client-side cap below it
        self.producer = Producer(settings.confluent(**{
            "enable.idempotence": True, "acks": "all", "linger.ms": 20, "partitioner": "murmur2_random",
            "message.max.bytes": 128 << 20}))
        self.topic, self.ledger_topic, self.dlq_topic = topic, ledger_topic(settings), settings.dlq_topic
        self.ledger, self.report, self.by = ledger, report, operator_name()
        self._delivered: list[tuple[DeadLetter, Position]] = []

    def send(self, letter: DeadLetter, key: bytes | None, value: bytes | None) -> None:
        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                self.report.failed.append((letter, err.str()))
            else:
                self._delivered.append((letter, Position(msg.topic(), msg.partition(), msg.offset())))

        headers = [(REPLAY_HEADER, f"{self.dlq_topic}:{letter.name}".encode())]
        self._produce(self.topic, key, value, headers, delivered)
        self._record_delivered()

    def _record_delivered(self) -> None:
        delivered, self._delivered = self._delivered, []
        for letter, to in delivered:
            self.report.replayed.append((letter, to))
            earlier = self.ledger.replay(letter)
            targets = [*(earlier or {}).get("targets", ()), to.to_json()]  # every replay's, for Ledger.origin
            entry = {"letter": letter.at.to_json(), "sha256": letter.digest, "code": letter.code,
                     "source": None if letter.source is None else letter.source.to_json(), "to": to.to_json(),
                     "targets": targets, "at": time.time(), "by": self.by, "count": len(targets)}

            def recorded(err: Any, _msg: Any, letter: DeadLetter = letter) -> None:
                if err is not None:
                    self.report.unrecorded.append((letter, err.str()))

            self._produce(self.ledger_topic, letter.name.encode(), json.dumps(entry).encode(), None, recorded)

    def _produce(self, topic: str, key: bytes | None, value: bytes | None, headers: Any,
                 on_delivery: Callable[[Any, Any], None]) -> None:
        while True:
            try:
                self.producer.produce(topic, key=key, value=value, headers=headers, on_delivery=on_delivery)
                break
            except BufferError:  # the local queue is full: serve delivery reports, then again
                self.producer.poll(0.1)
        self.producer.poll(0)

    def close(self, timeout: float) -> int:
        """Wait for every delivery and ledger record; the number still undelivered."""
        left = self.producer.flush(timeout)
        while self._delivered:  # originals delivered during the flush: their ledger records, then wait again
            self._record_delivered()
            left = self.producer.flush(timeout)
        del self.producer
        return int(left)


def plan(settings: Settings, select: Selection, again: bool, ledger: Ledger, report: ReplayReport
         ) -> dict[int, set[int]]:
    """First pass: the offsets (per partition of the dead-letter topic) of the letters to replay; the
    ones replayed already or dead letters of a replay (unless ``again``) go to ``report``, and so do
    copies: of the letters of one input record, one is replayed, and none if one was before."""
    picked: dict[bytes, Position] = {}  # input record -> the letter that replays it
    replayed: set[bytes] = set()  # input records a letter of which the ledger holds
    chosen: dict[int, set[int]] = {}
    for letter in read_letters(settings):
        record = letter.record
        if record is not None and ledger.replay(letter):
            replayed.add(record)
        if not select(letter):
            continue
        if not again and ledger.handled(letter):
            (report.already if ledger.replay(letter) else report.came_back).append(letter)
        elif record is not None and record in picked:
            report.copies.append(letter.name)
        else:
            if record is not None:
                picked[record] = letter.at
            chosen.setdefault(letter.at.partition, set()).add(letter.at.offset)
    for record, at in picked.items():
        if record in replayed and not again:
            chosen[at.partition].discard(at.offset)
            report.copies.append(f"{at.partition}:{at.offset}")
    return {partition: offsets for partition, offsets in chosen.items() if offsets}


def replay(settings: Settings, select: Selection, *, again: bool = False, dry_run: bool = False,
           topic: str | None = None, progress: bool = False, timeout: float = 60.0) -> ReplayReport:
    """Replay the selected letters (see the module doc); ``dry_run`` resolves every original and
    writes nothing."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    ledger = read_ledger(settings)
    report = ReplayReport(ledger=ledger)
    chosen = plan(settings, select, again, ledger, report)
    total = sum(len(offsets) for offsets in chosen.values())
    if not total:
        return report
    if not dry_run:
        ensure_ledger(settings)
    sender = None if dry_run else Sender(settings, topic or settings.documents_topic, ledger, report)
    start = {partition: min(offsets) for partition, offsets in chosen.items()}
    with Progress(TextColumn("replaying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  disable=not progress, transient=True) as bar:
        task = bar.add_task("replay", total=total)
        for letter in read_letters(settings, start):
            if letter.at.offset not in chosen.get(letter.at.partition, ()):
                continue
            try:
                key, value = originals(settings, letter)
            except NotReplayable as exc:
                report.not_replayable.append((letter, str(exc)))
            else:
                if sender is None:
                    report.replayed.append((letter, None))
                else:
                    sender.send(letter, key, value)
            bar.advance(task)
        if sender is not None:
            report.undelivered = sender.close(timeout)
    return report
