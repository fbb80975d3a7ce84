"""``dedup verdicts``: tail the verdict topic (table or JSON lines) with running counts and latency.

Reads with a group-less confluent-kafka consumer (``assign`` to every partition from the start): no
consumer-group join, so it starts at once (a group join takes ~20 s on tansu).
Latency = verdict ``processed_at`` - input record timestamp, first verdicts only (revisions are
reported as revisions, not as slow verdicts).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, Any

import click

from stream.service.commands.common import broker_option, client_settings, config_option
from stream.service.commands.reader import TopicReader
from stream.service.settings import Settings


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, max(0, round(q / 100 * (len(sorted_values) - 1))))
    return sorted_values[i]


@dataclass
class VerdictStats:
    counts: Counter[str] = field(default_factory=Counter)
    revised: int = 0
    latencies: list[float] = field(default_factory=list)
    latest: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, verdict: dict[str, Any]) -> None:
        self.latest[verdict["id"]] = verdict
        if verdict.get("revised"):
            self.revised += 1
        else:
            src = verdict.get("source") or {}
            if "timestamp" in src and "processed_at" in verdict:
                self.latencies.append(float(verdict["processed_at"]) - float(src["timestamp"]))

    def forget(self, doc_id: str) -> None:
        """A tombstone: the document was deleted, the compacted topic forgets it."""
        self.latest.pop(doc_id, None)

    def table_counts(self) -> Counter[str]:
        return Counter(v["verdict"] for v in self.latest.values())

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        return {
            "documents": len(self.latest), "verdicts": dict(self.table_counts()), "revisions": self.revised,
            "latency_ms": {f"p{q}": round(percentile(lat, q) * 1000, 1) for q in (50, 90, 99)} if lat else {},
        }


COLUMNS = ("id", "verdict", "canonical", "similarity", "distance", "matches", "revised", "latency_ms")


def row_of(v: dict[str, Any]) -> tuple[str, ...]:
    """One verdict as table cells: the canonical's similarity and distance, the number of matches."""
    latency = ""
    if not v.get("revised") and (v.get("source") or {}).get("timestamp") and "processed_at" in v:
        latency = f"{(v['processed_at'] - v['source']['timestamp']) * 1000:.0f}"
    similarity = v.get("similarity")
    return (str(v["id"]), str(v["verdict"]), str(v.get("canonical") or "-"),
            "" if similarity is None else f"{similarity:.3f}",
            "" if v.get("distance") is None else str(v["distance"]),
            str(v.get("match_count", len(v.get("matches") or ()))), "yes" if v.get("revised") else "", latency)


class RowPrinter:
    """Records as they come: a table with a header on a terminal, tab-separated lines (with a header
    line) when piped, or JSON lines; never wrapped. A subclass names the columns and a record's cells."""

    columns: tuple[str, ...] = ()
    widths: tuple[int, ...] = ()
    right: frozenset[str] = frozenset()  # right-aligned (numeric) columns

    def __init__(self, as_json: bool, stream: IO[str] | None = None) -> None:
        self.as_json = as_json
        self.stream = stream or sys.stdout
        self.terminal = self.stream.isatty() and not as_json
        self._header_done = False

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
                self.stream.write("\t".join(self.columns) + "\n")
            self.stream.write("".join("\t".join(_cell(c) for c in self.cells(r)) + "\n" for r in batch))
        self._header_done = True
        self.stream.flush()

    def _table(self, batch: list[Any]) -> None:
        from rich.console import Console
        from rich.table import Table

        table = Table(show_header=not self._header_done, box=None, pad_edge=False)
        for name, width in zip(self.columns, self.widths, strict=True):
            table.add_column(name, width=width, no_wrap=True, overflow="ellipsis",
                             justify="right" if name in self.right else "left")
        for record in batch:
            table.add_row(*self.cells(record))
        Console(file=self.stream).print(table)

    def note(self, text: str) -> None:
        """A progress line: on a terminal only, so piped output stays one record a line."""
        if self.terminal:
            self.stream.write(text + "\n")


class VerdictPrinter(RowPrinter):
    """Verdicts (the records as published)."""

    columns = COLUMNS
    widths = (32, 14, 32, 10, 8, 7, 7, 10)
    right = frozenset(("similarity", "distance", "matches", "latency_ms"))

    def cells(self, record: Any) -> tuple[str, ...]:
        return row_of(record)


def _cell(text: str) -> str:
    return text.replace("\t", " ").replace("\n", " ")


def tail(settings: Settings, topic: str, follow: bool, as_json: bool, idle_timeout: float = 5.0) -> VerdictStats:
    consumer = TopicReader(settings, topic).follow()
    stats = VerdictStats()
    printer = VerdictPrinter(as_json)
    last = time.monotonic()
    try:
        while True:
            msgs = consumer.consume(500, 0.5)
            batch = []
            for msg in msgs:
                if msg.error():
                    continue
                if msg.value() is None:
                    if msg.key() is not None:
                        stats.forget(msg.key().decode("utf-8", "replace"))
                    continue
                v = json.loads(msg.value())
                stats.add(v)
                batch.append(v)
                last = time.monotonic()
            printer.print(batch)
            if not follow and time.monotonic() - last > idle_timeout:
                break
            if follow and batch:
                counts = stats.table_counts()
                printer.note(f"-- {len(stats.latest)} documents: {counts.get('unique', 0)} unique, "
                             f"{counts.get('near_duplicate', 0)} near-duplicate, {counts.get('duplicate', 0)} "
                             f"duplicate, {stats.revised} revisions")
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    print(json.dumps(stats.summary(), ensure_ascii=False), file=sys.stderr)
    return stats


@click.command()
@broker_option
@config_option
@click.option("--follow", "-f", is_flag=True, help="Keep reading new verdicts until Ctrl-C.")
@click.option("--json", "as_json", is_flag=True, help="JSON lines (the verdict records as published).")
@click.option("--topic", default=None, help="Verdict topic to read (default: DEDUP_VERDICTS_TOPIC or verdicts).")
@click.option("--idle-timeout", type=click.FloatRange(0), default=5.0, show_default=True,
              help="Without --follow: stop after this many seconds without new verdicts.")
def verdicts(config: str | None, broker: str | None, follow: bool, as_json: bool, topic: str | None,
             idle_timeout: float) -> None:
    """Read the verdict topic from the beginning: a table on a terminal, tab-separated lines when piped,
    or JSON lines; then the counts and latency."""
    settings = client_settings(config, broker=broker)
    tail(settings, topic=topic or settings.verdicts_topic, follow=follow, as_json=as_json,
         idle_timeout=idle_timeout)
