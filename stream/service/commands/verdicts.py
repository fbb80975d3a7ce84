"""``dedup verdicts``: the verdict topic as a person reads it.

By default the current answer per id: the topic read to its end, the latest record per id kept (a
revision replaces the first verdict) and a tombstone (a deleted document) removing it, then one table
and a summary. ``--all`` lists every record as published (revisions and deletions as their own rows);
``--follow`` starts at the topic's end (or at ``--since``) and prints records as they arrive.
Filters: ``--verdict``, ``--id`` (exact or a glob), ``--since`` (a duration back from now, or a time).

Reads with a group-less confluent-kafka consumer (``TopicReader``): no consumer-group join (~20 s on
tansu). Latency = verdict ``processed_at`` - input record timestamp, first verdicts only (revisions
are reported as revisions, not as slow verdicts).
"""

from __future__ import annotations

import fnmatch
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import IO, Any

import click

from stream.service.commands.common import broker_option, client_settings, config_option, until_stopped
from stream.service.commands.reader import TopicReader
from stream.service.settings import Settings

DELETED = "deleted"  # the verdict shown for a tombstone: the document was deleted
VERDICTS = ("unique", "duplicate", "near_duplicate", "empty", DELETED)


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, max(0, round(q / 100 * (len(sorted_values) - 1))))
    return sorted_values[i]


def tombstone(doc_id: str, timestamp: float) -> dict[str, Any]:
    """A deletion as a row: the id, ``deleted``, and when the tombstone was written."""
    return {"id": doc_id, "verdict": DELETED, "processed_at": timestamp}


@dataclass
class VerdictStats:
    """The latest record per id (tombstones remove the id), and counts over every record seen."""

    counts: Counter[str] = field(default_factory=Counter)
    revised: int = 0
    deletions: int = 0
    latencies: list[float] = field(default_factory=list)
    latest: dict[str, dict[str, Any]] = field(default_factory=dict)
    deleted: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> its tombstone row

    def add(self, verdict: dict[str, Any]) -> None:
        if verdict["verdict"] == DELETED:
            self.forget(verdict["id"], verdict.get("processed_at", 0.0))
            return
        self.deleted.pop(verdict["id"], None)
        self.latest.pop(verdict["id"], None)  # re-inserted: the dict stays in order of the latest records
        self.latest[verdict["id"]] = verdict
        if verdict.get("revised"):
            self.revised += 1
        else:
            src = verdict.get("source") or {}
            if "timestamp" in src and "processed_at" in verdict:
                self.latencies.append(float(verdict["processed_at"]) - float(src["timestamp"]))

    def forget(self, doc_id: str, timestamp: float = 0.0) -> None:
        """A tombstone: the document was deleted, the compacted topic forgets it."""
        self.deletions += 1
        if self.latest.pop(doc_id, None) is not None or doc_id in self.deleted:
            self.deleted[doc_id] = tombstone(doc_id, timestamp)

    def current(self, with_deleted: bool = False) -> list[dict[str, Any]]:
        """The current answer per id, in the order of their latest records (deleted ids if asked)."""
        rows = list(self.latest.values()) + (list(self.deleted.values()) if with_deleted else [])
        return sorted(rows, key=lambda v: float(v.get("processed_at") or 0.0))

    def table_counts(self) -> Counter[str]:
        return Counter(v["verdict"] for v in self.latest.values())

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        return {
            "documents": len(self.latest), "verdicts": dict(self.table_counts()), "revisions": self.revised,
            "deleted": len(self.deleted), "deletions": self.deletions,
            "latency_ms": {f"p{q}": round(percentile(lat, q) * 1000, 1) for q in (50, 90, 99)} if lat else {},
        }


def describe(summary: dict[str, Any]) -> str:
    """The summary for a person: documents by verdict, deletions, revisions, latency."""
    counts = summary["verdicts"]
    mix = ", ".join(f"{counts[name]:,} {name.replace('_', '-')}" for name in VERDICTS[:-1] if counts.get(name))
    text = f"{summary['documents']:,} documents" + (f": {mix}" if mix else "")
    if summary["deleted"]:
        text += f"; {summary['deleted']:,} deleted"
    elif summary.get("deletions"):
        text += f"; {summary['deletions']:,} deletions"
    text += f"; {summary['revisions']:,} revisions"
    lat = summary["latency_ms"]
    if lat:
        text += f"\nlatency (input record to first verdict): p50 {lat['p50']:g} ms, p90 {lat['p90']:g} ms, " \
                f"p99 {lat['p99']:g} ms"
    return text


@dataclass(frozen=True)
class Column:
    name: str
    width: int  # the widest content expected; a flexible column takes what the terminal leaves
    right: bool = False  # numbers
    flexible: bool = False  # ids, previews: cut with an ellipsis when the terminal is narrow
    optional: bool = False  # dropped (rightmost first) when the terminal is too narrow for every column
    whole: bool = False  # ids: folded onto a second line when narrow, never cut (they are pasted into dedup show)


MIN_FLEXIBLE = 12  # narrower than this, an id is unreadable: drop an optional column instead


def fit(columns: tuple[Column, ...], total: int) -> list[tuple[Column, int]]:
    """Widths for ``columns`` in ``total`` characters: every header whole, fixed columns at their width,
    flexible ones sharing the rest; optional columns dropped (from the right) while that is too little."""
    shown = list(columns)
    while True:
        fixed = sum(max(c.width, len(c.name)) for c in shown if not c.flexible)
        flexible = [c for c in shown if c.flexible]
        room = total - fixed - 2 * (len(shown) - 1)
        optional = [c for c in shown if c.optional]
        if not flexible or room >= MIN_FLEXIBLE * len(flexible) or not optional:
            break
        shown.remove(optional[-1])
    nominal = sum(c.width for c in flexible) or 1
    widths = []
    for c in shown:
        if c.flexible:
            share = max(len(c.name), MIN_FLEXIBLE, room * c.width // nominal)
            widths.append((c, min(c.width, share) if room >= nominal else share))
        else:
            widths.append((c, max(c.width, len(c.name))))
    return widths


class RowPrinter:
    """Records as they come: a table fitted to the terminal (headers never cut) on a terminal,
    tab-separated lines (with a header line) when piped, or JSON lines. A subclass names the columns
    and a record's cells."""

    columns: tuple[Column, ...] = ()

    def __init__(self, as_json: bool, stream: IO[str] | None = None) -> None:
        self.as_json = as_json
        self.stream = stream or sys.stdout
        self.terminal = self.stream.isatty() and not as_json
        self._header_done = False
        self._fitted: list[tuple[Column, int]] | None = None
        self.streaming = True  # more batches may follow: keep the nominal widths as a floor

    def cells(self, record: Any) -> tuple[str, ...]:
        raise NotImplementedError

    def as_dict(self, record: Any) -> Any:
        return record

    def print(self, batch: list[Any]) -> None:
        if not batch:
            return
        if self.as_json:
            self.stream.write("".join(json.dumps(self.as_dict(r), ensure_ascii=False) + "\n" for r in batch))
        elif self.terminal:
            self._table(batch)
        else:
            if not self._header_done:
                self.stream.write("\t".join(c.name for c in self.columns) + "\n")
            self.stream.write("".join("\t".join(_cell(c) for c in self.cells(r)) + "\n" for r in batch))
        self._header_done = True
        self.stream.flush()

    def _table(self, batch: list[Any]) -> None:
        from rich.console import Console
        from rich.table import Table

        console = Console(file=self.stream, highlight=False)
        if self._fitted is None:  # once: every batch of a stream lines up under the first header
            self._fitted = fit(self._measured(batch), console.width)
        index = {c.name: i for i, c in enumerate(self.columns)}
        table = Table(show_header=not self._header_done, box=None, pad_edge=False, padding=(0, 1),
                      header_style="bold")
        for column, width in self._fitted:
            table.add_column(column.name, width=width, min_width=len(column.name), no_wrap=not column.whole,
                             overflow="fold" if column.whole else "ellipsis",
                             justify="right" if column.right else "left")
        for record in batch:
            cells = self.cells(record)
            table.add_row(*(cells[index[c.name]] for c, _ in self._fitted))
        console.print(table)

    def _measured(self, batch: list[Any]) -> tuple[Column, ...]:
        """The columns as wide as this batch needs (a stream's later rows may be wider: they are cut
        only where the terminal is narrow, as the nominal widths are kept as a floor while streaming)."""
        cells = [self.cells(record) for record in batch]
        out = []
        for i, column in enumerate(self.columns):
            need = max([len(column.name), *(len(row[i]) for row in cells)])
            out.append(replace(column, width=max(need, column.width) if self.streaming else need))
        return tuple(out)

    def note(self, text: str) -> None:
        """A progress line: on a terminal only, so piped output stays one record a line."""
        if self.terminal:
            self.stream.write(text + "\n")


def row_of(v: dict[str, Any]) -> tuple[str, ...]:
    """One verdict as table cells: the canonical's similarity and distance, the number of matches."""
    if v["verdict"] == DELETED:
        return (str(v["id"]), DELETED, "-", "", "", "", "", "")
    latency = ""
    if not v.get("revised") and (v.get("source") or {}).get("timestamp") and "processed_at" in v:
        latency = f"{(v['processed_at'] - v['source']['timestamp']) * 1000:.0f}"
    similarity = v.get("similarity")
    return (str(v["id"]), str(v["verdict"]), str(v.get("canonical") or "-"),
            "" if similarity is None else f"{similarity:.3f}",
            "" if v.get("distance") is None else str(v["distance"]),
            str(v.get("match_count", len(v.get("matches") or ()))), "yes" if v.get("revised") else "", latency)


class VerdictPrinter(RowPrinter):
    """Verdicts (the records as published; a deletion as a ``deleted`` row)."""

    columns = (Column("id", 32, flexible=True, whole=True), Column("verdict", 14),
               Column("canonical", 32, flexible=True, whole=True),
               Column("similarity", 10, right=True), Column("distance", 8, right=True),
               Column("matches", 7, right=True, optional=True), Column("revised", 7, optional=True),
               Column("latency_ms", 10, right=True, optional=True))

    def cells(self, record: Any) -> tuple[str, ...]:
        return row_of(record)

    def as_dict(self, record: Any) -> Any:
        if record["verdict"] == DELETED:
            return {"id": record["id"], "deleted": True, "processed_at": record["processed_at"]}
        return record


def _cell(text: str) -> str:
    return text.replace("\t", " ").replace("\n", " ")


@dataclass(frozen=True)
class VerdictFilter:
    """Which records to show: by verdict (``deleted`` for deletions), by id (exact or glob), by time."""

    verdicts: frozenset[str] = frozenset()
    ids: frozenset[str] = frozenset()
    since: float | None = None  # epoch seconds: records published at or after it

    def __call__(self, v: dict[str, Any]) -> bool:
        if self.verdicts and v["verdict"] not in self.verdicts:
            return False
        if self.ids and not any(v["id"] == p or fnmatch.fnmatchcase(v["id"], p) for p in self.ids):
            return False
        return self.since is None or float(v.get("processed_at") or 0.0) >= self.since


def parse_since(_ctx: click.Context | None, _param: click.Parameter | None, value: str | None) -> float | None:
    """``--since``: a duration back from now (10m, 2h, 1d) or an ISO 8601 time (naive: local time)."""
    if value is None:
        return None
    from stream.durations import parse_duration

    try:
        return time.time() - parse_duration(value, "--since")
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        raise click.BadParameter(f"{value!r} is neither a duration (10m, 2h, 1d) nor a time "
                                 "(2026-11-27T09:30)") from None


def record_of(msg: Any) -> dict[str, Any] | None:
    """A verdict record as a dict (a tombstone as a ``deleted`` row); None for an unreadable record."""
    if msg.value() is None:
        if msg.key() is None:
            return None
        return tombstone(msg.key().decode("utf-8", "replace"), msg.timestamp()[1] / 1000)
    try:
        verdict = json.loads(msg.value())
    except ValueError:
        return None
    return verdict if isinstance(verdict, dict) and "id" in verdict and "verdict" in verdict else None


def start_offsets(reader: TopicReader, since: float | None, at_end: bool) -> dict[int, int] | None:
    """Where to start reading each partition: the first record at or after ``since``; else the end
    (``at_end``), else the beginning (None)."""
    from confluent_kafka import OFFSET_END, KafkaException, TopicPartition

    if since is None:
        if not at_end:
            return None
        # the end as an offset now, not OFFSET_END: that one is resolved when the first fetch goes out,
        # and what was published meanwhile (a busy machine: seconds) would be skipped
        ends = {}
        for p in reader.partitions:
            try:
                ends[p] = reader.consumer.get_watermark_offsets(TopicPartition(reader.topic, p), timeout=10)[1]
            except KafkaException:  # the broker did not say: its end, as it will be when reading starts
                ends[p] = OFFSET_END
        return ends
    wanted = [TopicPartition(reader.topic, p, int(since * 1000)) for p in reader.partitions]
    found = reader.consumer.offsets_for_times(wanted, timeout=10)
    return {tp.partition: tp.offset if tp.offset >= 0 else OFFSET_END for tp in found}


def read_current(settings: Settings, topic: str, since: float | None) -> tuple[VerdictStats, int]:
    """The topic read to its end (from ``since`` on): the latest record per id; and how many records."""
    reader = TopicReader(settings, topic)
    stats, n = VerdictStats(), 0
    try:
        if not reader.partitions:
            reader.follow()  # the missing-topic error
        for msg in reader.records(start_offsets(reader, since, at_end=False)):
            record = record_of(msg)
            if record is not None:
                stats.add(record)
                n += 1
    finally:
        reader.close()
    return stats, n


def show_all(settings: Settings, topic: str, select: VerdictFilter, printer: VerdictPrinter) -> VerdictStats:
    """Every record to the topic's end, as published."""
    reader = TopicReader(settings, topic)
    stats = VerdictStats()
    batch: list[dict[str, Any]] = []
    try:
        if not reader.partitions:
            reader.follow()
        for msg in reader.records(start_offsets(reader, select.since, at_end=False)):
            record = record_of(msg)
            if record is None:
                continue
            stats.add(record)
            if select(record):
                batch.append(record)
            if len(batch) >= 500:
                printer.print(batch)
                batch = []
    finally:
        reader.close()
    printer.print(batch)
    return stats


def follow_records(settings: Settings, topic: str, select: VerdictFilter, printer: VerdictPrinter,
           stop: Callable[[], bool] = lambda: False) -> VerdictStats:
    """Records as they arrive, from the end (or ``select.since``) until ``stop()`` (or Ctrl-C).

    From the end means records published from now on: a broker may list the end of a partition
    inside its last record batch (tansu: the batch's base offset + 1, docs/service.md), so records
    published before the start are also left out by their time."""
    reader = TopicReader(settings, topic)
    if not reader.partitions:
        reader.follow()  # the missing-topic error
    consumer = reader.follow(start_offsets(reader, select.since, at_end=True))
    fresh = VerdictFilter(since=time.time() if select.since is None else select.since)
    stats = VerdictStats()
    try:
        while not stop():
            batch = []
            for msg in consumer.consume(500, 0.5):
                record = None if msg.error() else record_of(msg)
                if record is None or not fresh(record):
                    continue
                stats.add(record)
                if select(record):
                    batch.append(record)
            printer.print(batch)
    except KeyboardInterrupt:
        pass
    finally:
        reader.close()
    return stats


def _report(summary: dict[str, Any], as_json: bool) -> None:
    click.echo(json.dumps(summary, ensure_ascii=False) if as_json else describe(summary), err=True)


def _filtered(rows: Iterable[dict[str, Any]], select: VerdictFilter) -> list[dict[str, Any]]:
    return [v for v in rows if select(v)]


@click.command()
@broker_option
@config_option
@click.option("--all", "every", is_flag=True, help="Every record as published: first verdicts, revisions and "
                                                   "deletions, in topic order (default: the current answer per id).")
@click.option("--follow", "-f", is_flag=True, help="Print records as they arrive, from now (or --since), until "
                                                   "Ctrl-C or SIGTERM; the topic is not read first.")
@click.option("--verdict", "verdict_names", multiple=True, type=click.Choice(VERDICTS),
              help="Only these verdicts (repeat for several); 'deleted' shows deleted ids.")
@click.option("--id", "ids", multiple=True, metavar="ID", help="Only this id, or ids matching a glob such as "
                                                               "'news-*' (repeat for several).")
@click.option("--since", callback=parse_since, metavar="WHEN",
              help="Only records published since: a duration back from now (10m, 2h, 1d) or a time "
                   "(2026-11-27T09:30, local time unless it names a zone).")
@click.option("--json", "as_json", is_flag=True, help="JSON lines (the verdict records as published; a deletion as "
                                                      "{id, deleted: true}); the summary as JSON on stderr.")
@click.option("--topic", default=None, help="Verdict topic to read (default: DEDUP_VERDICTS_TOPIC or verdicts).")
def verdicts(config: str | None, broker: str | None, every: bool, follow: bool, verdict_names: tuple[str, ...],
             ids: tuple[str, ...], since: float | None, as_json: bool, topic: str | None) -> None:
    """The verdicts: by default the current answer per id (a revision replaces the first verdict, a deleted
    document is left out), as a table on a terminal, tab-separated lines when piped, or JSON lines;
    then a summary on standard error."""
    settings = client_settings(config, broker=broker)
    name = topic or settings.verdicts_topic
    select = VerdictFilter(frozenset(verdict_names), frozenset(ids), since)
    printer = VerdictPrinter(as_json)
    if follow:
        with until_stopped() as stopped:  # polled every 0.5 s: the reader is closed and the summary printed
            stats = follow_records(settings, name, select, printer, stop=stopped)
        _report(stats.summary(), as_json)
        return
    if every:
        stats = show_all(settings, name, select, printer)
        _report(stats.summary(), as_json)
        return
    stats, _ = read_current(settings, name, since)
    rows = _filtered(stats.current(with_deleted=DELETED in select.verdicts), select)
    printer.streaming = False
    printer.print(rows)
    shown = VerdictStats()
    for row in rows:
        shown.add(row)
    summary = stats.summary() if not (select.verdicts or select.ids or since) else {
        **shown.summary(), "deleted": sum(1 for r in rows if r["verdict"] == DELETED)}
    _report(summary, as_json)

