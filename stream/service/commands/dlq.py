"""``dedup dlq list | replay`` (loaded lazily by stream.cli): the dead-letter topic for operators."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

import click

from stream.errors import EXIT_BROKER, EXIT_REJECTED
from stream.service.commands.common import broker_option, client_settings, config_option
from stream.service.commands.letters import DeadLetter, check_selectors, read_letters
from stream.service.commands.replay import Ledger, ReplayReport, Selection, read_ledger, replay
from stream.service.commands.verdicts import Column, RowPrinter

BATCH = 200  # letters per printed table: a terminal sees the first ones while the rest are read


class LetterPrinter(RowPrinter):
    """Letters with what the ledger knows of them."""

    columns = (Column("letter", 9), Column("code", 18), Column("stage", 11), Column("source", 30, flexible=True),
               Column("replayed", 10), Column("preview", 60, flexible=True))

    def __init__(self, as_json: bool, ledger: Ledger) -> None:
        super().__init__(as_json)
        self.ledger = ledger

    def cells(self, letter: DeadLetter) -> tuple[str, ...]:
        return (letter.name, letter.code, letter.stage, str(letter.source or "-"), self.replayed(letter),
                letter.preview())

    def replayed(self, letter: DeadLetter) -> str:
        """``yes`` (``yes (N)``: N times), ``from P:O`` (the dead letter of letter P:O's replay), or empty."""
        mark = self.ledger.replay(letter)
        if mark is not None:
            return "yes" if mark.get("count", 1) == 1 else f"yes ({mark['count']})"
        origin = self.ledger.origin(letter)
        return "" if origin is None else f"from {origin}"

    def as_dict(self, letter: DeadLetter) -> Any:
        return {**letter.envelope, "letter": letter.at.to_json(), "replayed": self.ledger.replay(letter),
                "replay_of": self.ledger.origin(letter)}


def parse_since(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[int | None, int | None]:
    if value is None:
        return None, None
    partition, _, offset = value.rpartition(":")
    try:
        return (int(partition) if partition else None), int(offset)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not OFFSET or PARTITION:OFFSET") from None


reason_option = click.option("--reason", "reasons", multiple=True, metavar="CODE",
                             help="Only letters with this code (docs/usage.md, Dead letters); repeat for several.")
since_option = click.option("--since", callback=parse_since, metavar="[PARTITION:]OFFSET",
                            help="Only letters at or after this offset of the dead-letter topic (`dlq list` shows "
                                 "each letter as PARTITION:OFFSET); with PARTITION:, in that partition only.")


def _selection(reasons: tuple[str, ...], since: tuple[int | None, int | None]) -> Selection:
    return Selection(frozenset(reasons), since[1], since[0])


@click.group()
def command() -> None:
    """The dead-letter topic: list the letters, replay their originals once the cause is fixed."""


@command.command("list")
@broker_option
@config_option
@reason_option
@since_option
@click.option("--json", "as_json", is_flag=True, help="JSON lines: each envelope with its position and replay.")
def list_command(config: str | None, broker: str | None, reasons: tuple[str, ...],
                 since: tuple[int | None, int | None], as_json: bool) -> None:
    """Show the dead letters: code, source record, stage, whether replayed, and the start of the value;
    a table on a terminal, tab-separated lines when piped. The count per code goes to standard error."""
    settings = client_settings(config, broker=broker)
    check_selectors(settings, reasons, since[0])
    select = _selection(reasons, since)
    ledger = read_ledger(settings)
    printer = LetterPrinter(as_json, ledger)
    counts: Counter[str] = Counter()
    handled = copies = 0
    records: set[bytes] = set()
    batch: list[DeadLetter] = []
    for letter in read_letters(settings):
        if not select(letter):
            continue
        counts[letter.code] += 1
        handled += ledger.handled(letter)
        record = letter.record
        if record is not None:
            copies += record in records
            records.add(record)
        batch.append(letter)
        if len(batch) >= BATCH:
            printer.print(batch)
            batch = []
    printer.print(batch)
    per_code = ", ".join(f"{code} {n}" for code, n in sorted(counts.items()))
    also = f", {copies} copies of another letter's input record" if copies else ""
    click.echo(f"{sum(counts.values())} dead letters on {settings.dlq_topic} ({handled} replayed or from a replay"
               f"{also}){': ' + per_code if per_code else ''}", err=True)


@command.command("replay")
@broker_option
@config_option
@reason_option
@since_option
@click.option("--again", is_flag=True, help="Also replay letters the ledger says were replayed already.")
@click.option("--dry-run", is_flag=True, help="Show what would be replayed (and what cannot be); write nothing.")
@click.option("--topic", default=None, help="Where to republish (default: the documents topic, "
                                            "DEDUP_DOCUMENTS_TOPIC).")
def replay_command(config: str | None, broker: str | None, reasons: tuple[str, ...],
                   since: tuple[int | None, int | None], again: bool, dry_run: bool, topic: str | None) -> None:
    """Republish the original key and value of the selected dead letters to the documents topic, once
    the cause is fixed. A letter is replayed once (recorded in the compacted topic DLQ.replayed,
    shared by every operator) unless --again. A value cut to a preview in the letter is re-read from
    the input record the letter names. Exit 1 if some letters could not be replayed (each reported),
    4 if some were not delivered."""
    settings = client_settings(config, broker=broker)
    check_selectors(settings, reasons, since[0])
    report = replay(settings, _selection(reasons, since), again=again, dry_run=dry_run, topic=topic,
                    progress=sys.stderr.isatty())
    if dry_run:
        LetterPrinter(False, report.ledger).print([letter for letter, _ in report.replayed])
    for letter, reason in report.not_replayable:
        click.echo(f"letter {letter.name} ({letter.code}, from {letter.source or '?'}): not replayable: {reason}",
                   err=True)
    for letter, reason in report.failed:
        click.echo(f"letter {letter.name}: not delivered: {reason}", err=True)
    for letter, reason in report.unrecorded:
        click.echo(f"letter {letter.name}: replayed, but its ledger record was not delivered ({reason}): a later "
                   "replay sends it again", err=True)
    click.echo(_summary(report, topic or settings.documents_topic, dry_run), err=True)
    if report.failed or report.unrecorded or report.undelivered:
        sys.exit(EXIT_BROKER)
    if report.not_replayable:
        sys.exit(EXIT_REJECTED)


def _summary(report: ReplayReport, topic: str, dry_run: bool) -> str:
    done = f"{'would replay' if dry_run else 'replayed'} {len(report.replayed)} dead letters to {topic}"
    parts = [done]
    if report.already:
        parts.append(f"{len(report.already)} skipped as already replayed")
    if report.came_back:
        parts.append(f"{len(report.came_back)} skipped as dead letters of a replay (is the cause fixed?)")
    if report.already or report.came_back:
        parts[-1] += " (--again replays them)"
    if report.copies:
        parts.append(f"{len(report.copies)} skipped as copies of another letter of the same input record")
    if report.not_replayable:
        parts.append(f"{len(report.not_replayable)} not replayable")
    if report.failed or report.undelivered:
        parts.append(f"{len(report.failed) + report.undelivered} not delivered")
    return "; ".join(parts)
