"""``dedup console``, ``dedup show ID`` and ``dedup diff A B``: read-only views of a deployment."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import click

from stream.console.diff import EQUAL, TextDiff, diff_texts
from stream.console.document_reader import DocumentReader, Shown, where
from stream.console.feed import Feed, read_verdicts
from stream.console.model import ConsoleState
from stream.errors import UsageError
from stream.service.commands.common import broker_option, client_settings, config_option
from stream.service.settings import Settings

DEFAULT_PORT = 8089


@click.command()
@broker_option
@config_option
@click.option("--port", "-p", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
              help="Port of the page (0: any free one, printed).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. The console is read-only, but it shows document texts: bind another "
                   "address only on a network you trust.")
def console(broker: str | None, config: str | None, port: int, host: str) -> None:
    """A live web console of the verdict topics: throughput, verdict mix, clusters, pairs and their diffs."""
    settings = client_settings(config, broker=broker)
    state, lock = ConsoleState(time.time), threading.Lock()
    feed = Feed(settings, state, lock).start()
    reader = DocumentReader(settings)

    def status() -> dict[str, Any]:
        return {"caught_up": feed.caught_up.is_set(), "error": feed.error, "broker": settings.bootstrap,
                "topics": sorted(feed.assigned),
                "missing": [t for t in (settings.verdicts_topic, settings.dlq_topic) if t not in feed.assigned]}

    def ready(url: str) -> None:
        click.echo(f"dedup console: {url} (verdicts: {settings.verdicts_topic}, dead letters: {settings.dlq_topic}; "
                   "Ctrl-C stops)", err=True)

    try:
        asyncio.run(_serve(settings, state, lock, reader, status, host, port, ready))
    except KeyboardInterrupt:
        pass
    finally:
        feed.stop()
        reader.close()


async def _serve(settings: Settings, state: ConsoleState, lock: threading.Lock, reader: DocumentReader,
                 status: Callable[[], dict[str, Any]], host: str, port: int, ready: Callable[[str], None]) -> None:
    from aiohttp import web

    from stream.console.web import Console, make_app

    runner = web.AppRunner(make_app(Console(state, lock, reader, status)), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:
        await runner.cleanup()
        reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)  # aiohttp's message repeats the address
        raise UsageError(f"cannot serve the console on {host}:{port}: {reason} (choose another --port)") from None
    bound = runner.addresses[0]
    ready(f"http://{'[' + bound[0] + ']' if ':' in bound[0] else bound[0]}:{bound[1]}/")
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def _when(at: float | None) -> str:
    if at is None:
        return "-"
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%m-%d %H:%M:%S")


def _terminal() -> Any:
    """rich's console: the terminal's width, or wide lines when piped (never cut a header)."""
    import sys

    from rich.console import Console as Terminal

    return Terminal(highlight=False, width=None if sys.stdout.isatty() else 200)


def _loaded(config: str | None, broker: str | None) -> tuple[Settings, ConsoleState]:
    settings = client_settings(config, broker=broker)
    return settings, read_verdicts(settings, ConsoleState(time.time))


@click.command()
@click.argument("doc_id", metavar="ID")
@broker_option
@config_option
@click.option("--chars", type=click.IntRange(0), default=1500, show_default=True,
              help="Characters of the text to print (0: all).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: the document, its verdicts, its cluster.")
def show(doc_id: str, broker: str | None, config: str | None, chars: int, as_json: bool) -> None:
    """A document (read from the documents topic where its verdict says it is) and its verdict history."""
    settings, state = _loaded(config, broker)
    found = state.document(doc_id)
    if not found["known"]:
        raise UsageError(f"no verdict for {doc_id!r} on {settings.verdicts_topic}")
    shown: Shown | None = None
    missing = "deleted" if found["deleted"] else None
    position = state.position_of(doc_id)
    if position is not None:
        reader = DocumentReader(settings)
        try:
            shown = reader.read(position)
        except UsageError as exc:  # the verdicts are still worth showing
            missing = str(exc)
        finally:
            reader.close()
    if as_json:
        click.echo(json.dumps({**found, "document": shown.to_json() if shown else None, "text_missing": missing},
                              ensure_ascii=False))
        return
    _print_document(doc_id, found, shown, chars)
    if shown is None and missing and not found["deleted"]:
        click.echo(f"(text not shown: {missing})")


def _print_document(doc_id: str, found: dict[str, Any], shown: Shown | None, chars: int) -> None:
    out = _terminal()
    out.print(f"[bold]{doc_id}[/bold]" + ("  [red](deleted)[/red]" if found["deleted"] else ""), markup=True)
    if shown is not None:
        for label, value in (("title", shown.title), ("url", shown.url), ("at", where(shown.position))):
            if value:
                out.print(f"{label}: {value}", markup=False)
        text = shown.text if chars == 0 or len(shown.text) <= chars else shown.text[:chars] + " …"
        out.print(text, markup=False)
    out.print("verdicts, oldest first (UTC):", markup=False)
    for v in found["history"]:  # one line each: nothing is cut on a narrow terminal, it wraps
        out.print(f"  {_when(v['at'])}  deleted" if v.get("deleted") else
                  f"  {_when(v['processed_at'])}  {_line(v)}", markup=False)
    cluster = found["cluster"]
    if cluster is not None:
        others = [m for m in cluster["members"] if m != doc_id]
        out.print(f"cluster of {cluster['canonical']}: {len(cluster['members']) + 1} documents"
                  + (f" ({', '.join(others[:20])}{' …' if len(others) > 20 else ''})" if others else ""), markup=False)


def _line(v: dict[str, Any]) -> str:
    parts = [str(v["verdict"])]
    if v["canonical"] is not None:
        parts[0] += f" of {v['canonical']}"
        parts += [f"similarity {_num(v['similarity'])}", f"containment {_num(v['containment'])}",
                  f"{v['match_count']} match{'es' if v['match_count'] != 1 else ''}"]
    if v["revised"]:
        parts.append("(revision)")
    return "  ".join(parts)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


@click.command()
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@broker_option
@config_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object: both documents and the passages.")
def diff(a: str, b: str, broker: str | None, config: str | None, as_json: bool) -> None:
    """The texts of documents A and B with their shared and differing passages: [-only in A-] {+only in B+}.

    Where B's verdict names A as its canonical (or A's names B), the version that was compared is read."""
    settings, state = _loaded(config, broker)
    positions = {a: state.position_of(b, a), b: state.position_of(a, b)}
    for doc, position in positions.items():
        if position is None:
            raise UsageError(f"no current verdict for {doc!r} on {settings.verdicts_topic} (unknown, or deleted)")
    reader = DocumentReader(settings)
    try:
        first, second = reader.read(positions[a]), reader.read(positions[b])  # type: ignore[arg-type]
    finally:
        reader.close()
    result = diff_texts(first.text, second.text)
    if as_json:
        click.echo(json.dumps({"a": first.to_json(), "b": second.to_json(), **result.to_json()}, ensure_ascii=False))
        return
    _print_diff(first, second, result)


def _print_diff(first: Shown, second: Shown, result: TextDiff) -> None:
    from rich.text import Text

    out = _terminal()
    out.print(f"--- {first.id}  {where(first.position)}  {first.title}".rstrip(), markup=False)
    out.print(f"+++ {second.id}  {where(second.position)}  {second.title}".rstrip(), markup=False)
    note = " (compared on their beginnings: the texts are long)" if result.truncated else ""
    out.print(f"shared: {result.shared:.0%} of the text{note}; [-only in {first.id}-] {{+only in {second.id}+}}",
              markup=False)
    body = Text()
    for seg in result.segments:
        if seg.op == EQUAL:
            body.append(seg.b)
            continue
        if seg.a:
            body.append("[-" + seg.a + "-]", style="red strike")
        if seg.b:
            body.append("{+" + seg.b + "+}", style="green")
    out.print(body)
