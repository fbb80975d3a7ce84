"""``dedup demo``: embedded broker + worker(s), publish a bundled sample, show verdicts live, summarize."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

import click

from stream.errors import DedupError
from stream.service.commands.reader import TopicReader
from stream.service.commands.verdicts import VerdictStats
from stream.service.runtime.embedded import EmbeddedBroker
from stream.service.settings import Settings, load_settings


def sample_lines(data: str | None) -> list[str]:
    if data:
        text = Path(data).read_text(encoding="utf-8")
    else:
        text = resources.files("stream").joinpath("data/demo/tang_demo.jsonl").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


def start_workers(n: int, env: dict[str, str], root: Path) -> list[subprocess.Popen[bytes]]:
    procs = []
    for i in range(n):
        log = open(root / f"worker-{i}.log", "ab")  # noqa: SIM115
        procs.append(subprocess.Popen([sys.executable, "-m", "stream", "worker", "--data-dir",
                                       str(root / f"worker-{i}")], env=env, stdout=log, stderr=subprocess.STDOUT))
    return procs


def run_demo(data: str | None = None, workers: int = 1, partitions: int = 4, keep_running: bool = False) -> int:
    from rich.console import Console

    from stream.service.runtime.worker_process import apply_topology

    console = Console(soft_wrap=True)  # piped output: one verdict a line, never wrapped
    lines = sample_lines(data)
    root = Path(tempfile.mkdtemp(prefix="dedup-demo-"))
    broker = EmbeddedBroker(log_path=root / "tansu.log").start()
    console.print(f"[bold]embedded broker[/bold] tansu on {broker.bootstrap} (in memory); state in {root} "
                  "(removed when every document got its verdict)")
    env = {**os.environ, "DEDUP_BROKER": broker.url, "DEDUP_PARTITIONS": str(partitions),
           "DEDUP_REBALANCE_TIMEOUT": "2", "DEDUP_APP_ID": "dedup-demo",
           # a demo shows each revision as it comes, not merged over the default 30 s
           "DEDUP_REVISION_INTERVAL": os.environ.get("DEDUP_REVISION_INTERVAL", "1s")}
    settings = load_settings(env=env)
    apply_topology(settings, lambda m: console.print(f"[dim]{m}[/dim]"))
    procs = start_workers(workers, env, root)
    answered = False
    try:
        with console.status(f"starting {workers} worker(s) (consumer-group join, table recovery)..."):
            _wait_ready(root, procs)
        started = _publish(settings, lines, console)
        labels = {str(doc["id"]): label_of(doc) for doc in map(json.loads, lines)}
        console.print(LEGEND, highlight=False)
        stats, last_at = _follow(settings, labels, procs, root, console)
        _summarize(stats, max(1e-9, last_at - started), console)
        answered = len(stats.latest) >= len(labels)
        if keep_running:
            broker.register()
            console.print(f"broker and worker keep running: `dedup verdicts` (or --broker {broker.url}); "
                          "Ctrl-C stops")
            while all(p.poll() is None for p in procs):
                time.sleep(1)
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        _stop(procs)
        broker.stop()
        _tidy(root, answered, console)


def _tidy(root: Path, answered: bool, console: Any) -> None:
    """The in-memory broker is gone, so the workers' state cannot serve again: removed once every
    document was answered; otherwise kept for its logs."""
    if answered:
        shutil.rmtree(root, ignore_errors=True)
    else:
        console.print(f"not every document got a verdict: the worker and broker logs are kept in {root}")


def _publish(settings: Settings, lines: list[str], console: Any) -> float:
    """Publish the sample; returns when publishing started."""
    from stream.service.commands.publish import DocumentProducer

    started = time.time()
    with DocumentProducer(settings=settings) as producer:
        for line in lines:
            producer.send(line.encode(), key=json.loads(line)["id"])
    console.print(f"published {len(lines)} documents to '{settings.documents_topic}'")
    return started


LEGEND = ("[bold]legend[/bold]  [yellow]duplicate[/yellow]: the same text as an earlier document; "
          "[yellow]near-duplicate[/yellow]: a verified similarity of 0.8 or more (A ~ B), or most of A's "
          "text inside B (A ⊂ B); [yellow]revised[/yellow]: a later arrival changed an earlier verdict. Each "
          "document is shown as its title (or first words) and id; unique documents are counted, not listed.")
SNIPPET_CHARS = 16


def label_of(doc: dict[str, Any]) -> str:
    """A document as a person recognizes it: its title, else the first characters of its text."""
    fields = doc.get("fields")
    title = doc.get("title") or (fields.get("title") if isinstance(fields, dict) else None)
    if isinstance(title, str) and title.strip():
        return f"《{title.strip()[:SNIPPET_CHARS]}》"
    text = " ".join(str(doc.get("text") or "").split())
    return f"“{text[:SNIPPET_CHARS]}{'…' if len(text) > SNIPPET_CHARS else ''}”"


def _follow(settings: Settings, labels: dict[str, str], procs: list[subprocess.Popen[bytes]], root: Path,
            console: Any) -> tuple[VerdictStats, float]:
    """Print duplicates as their verdicts arrive, until every document has one (and 3 s for late
    revisions, held up to the demo's 1 s revision interval); returns the counts and when the last
    verdict arrived."""
    documents = len(labels)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    stats = VerdictStats()
    consumer = TopicReader(settings, settings.verdicts_topic).follow()
    last_at = time.time()
    try:
        with Progress(TextColumn("verdicts"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console) as bar:
            task = bar.add_task("verdicts", total=documents)
            deadline = time.time() + 300
            while len(stats.latest) < documents and time.time() < deadline:
                for msg in consumer.consume(500, 0.3):
                    if msg.error() or msg.value() is None:
                        continue
                    verdict: dict[str, Any] = json.loads(msg.value())
                    stats.add(verdict)
                    last_at = time.time()
                    _print_duplicate(verdict, labels, bar.console)
                bar.update(task, completed=len(stats.latest))
                if any(p.poll() is not None for p in procs):
                    raise DedupError(f"a worker stopped; see {root}/worker-*.log")
            end = time.time() + 3
            while time.time() < end:
                for msg in consumer.consume(500, 0.3):
                    if not msg.error() and msg.value() is not None:
                        stats.add(json.loads(msg.value()))
    finally:
        consumer.close()
    return stats, last_at


def _print_duplicate(v: dict[str, Any], labels: dict[str, str], console: Any) -> None:
    if v["verdict"] not in ("duplicate", "near_duplicate"):
        return
    tag = "revised " if v.get("revised") else ""
    others = f", {v['match_count']} matches" if v.get("match_count", 1) > 1 else ""
    how = "⊂" if v.get("relation") == "contained" else "~"
    doc, canonical = str(v["id"]), str(v["canonical"])
    console.print(f"[yellow]{tag}{v['verdict'].replace('_', '-'):14}[/yellow] {labels.get(doc, '')} [dim]{doc}[/dim] "
                  f"{how} {labels.get(canonical, '')} [dim]{canonical}[/dim]  similarity {v['similarity']:.2f}, "
                  f"distance {v['distance']}{others}", markup=True, highlight=False)


def _summarize(stats: VerdictStats, elapsed: float, console: Any) -> None:
    summary = stats.summary()
    counts = summary["verdicts"]
    console.print()
    console.print("[bold]summary[/bold]")
    console.print(f"  documents        {summary['documents']}")
    found = counts.get("duplicate", 0) + counts.get("near_duplicate", 0)
    console.print(f"  duplicates found {found}: {counts.get('duplicate', 0)} exact, "
                  f"{counts.get('near_duplicate', 0)} near")
    console.print(f"  other documents  {counts.get('unique', 0)} unique, {counts.get('empty', 0)} empty (nothing to "
                  f"compare); {stats.revised} verdicts revised")
    console.print(f"  throughput       {summary['documents'] / elapsed:.0f} documents/s "
                  f"(publish to last verdict, {elapsed:.1f} s)")
    lat = summary["latency_ms"]
    if lat:
        console.print(f"  latency          p50 {lat['p50']} ms, p90 {lat['p90']} ms, p99 {lat['p99']} ms "
                      "(record timestamp to verdict; a burst, so this includes queueing)")


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()


def _wait_ready(root: Path, procs: list[subprocess.Popen[bytes]], timeout: float = 90.0) -> None:
    """Every worker assigned, recovered and consuming: its ``READY`` file (``app.ReadyMarker``)."""
    from stream.service.runtime.app import READY_FILE

    markers = [root / f"worker-{i}" / READY_FILE for i in range(len(procs))]
    deadline = time.time() + timeout
    while not all(m.exists() for m in markers):
        if any(p.poll() is not None for p in procs):
            raise DedupError(f"a worker exited during start-up; see {root}/worker-*.log")
        if time.time() > deadline:
            raise DedupError(f"the workers were not ready after {timeout:.0f} s; see {root}/worker-*.log")
        time.sleep(0.2)


@click.command()
@click.option("--data", "data", default=None, type=click.Path(exists=True, dir_okay=False),
              help="JSONL documents (default: the bundled sample of Tang poems with real near-duplicates).")
@click.option("--workers", type=click.IntRange(1, 8), default=1, show_default=True, help="Worker processes.")
@click.option("--partitions", type=click.IntRange(1), default=4, show_default=True,
              help="Partitions of the documents topic (the internal ones have the worker's default).")
@click.option("--keep-running", is_flag=True, help="Leave broker and worker up after the summary.")
def demo(data: str | None, workers: int, partitions: int, keep_running: bool) -> None:
    """Embedded broker + worker, publish a sample with real near-duplicates, show verdicts live."""
    sys.exit(run_demo(data=data, workers=workers, partitions=partitions, keep_running=keep_running))
