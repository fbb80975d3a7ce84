"""``dedup worker | publish | verdicts | demo | topology | broker`` (loaded lazily by stream.cli)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from stream.service.settings import Settings, load_settings


def _settings(config: str | None, **overrides: Any) -> Settings:
    try:
        return load_settings(config, **overrides)
    except Exception as exc:
        raise click.UsageError(str(exc)) from exc


broker_option = click.option("--broker", "-b", default=None,
                             help="kafka://HOST:PORT[,HOST:PORT] (env DEDUP_BROKER). Default: embedded broker.")
config_option = click.option("--config", "-c", "config", default=None, type=click.Path(dir_okay=False),
                             help="YAML settings file (env DEDUP_CONFIG).")


@click.command()
@broker_option
@config_option
@click.option("--data-dir", type=click.Path(file_okay=False), default=None, help="RocksDB state (DEDUP_DATA_DIR).")
@click.option("--app-id", default=None, help="Faust app id = consumer group (DEDUP_APP_ID).")
@click.option("--partitions", type=int, default=None, help="Partitions of every topic (DEDUP_PARTITIONS).")
@click.option("--batch-size", type=int, default=None, help="Documents per batch (DEDUP_BATCH_SIZE).")
@click.option("--metrics-port", type=int, default=None, help="Serve Prometheus metrics on this port.")
@click.option("--loglevel", "log_level", default=None, help="warning | info | debug.")
def worker(config: str | None, **overrides: Any) -> None:
    """Run a dedup worker: documents in, verdicts out. Scale by starting more with the same app id."""
    from stream.service.worker import run_worker

    settings = _settings(config, **overrides)
    sys.exit(run_worker(settings, lambda m: click.echo(m, err=True)))


@click.group()
def topology() -> None:
    """Create missing topics (apply) or report drift (check), from topology/topics.yaml."""


def _topology_run(action: str, config: str | None, overrides: dict[str, Any]) -> None:
    from topology import admin

    settings = _settings(config, **overrides)
    if not settings.broker:
        raise click.UsageError("--broker (or DEDUP_BROKER) is required")
    report = getattr(admin, action)(settings.topology(), settings.confluent())
    for name in report.created:
        click.echo(f"created  {name}")
    for name in report.ok:
        if name not in report.created:
            click.echo(f"ok       {name}")
    for name in report.missing:
        click.echo(f"missing  {name}")
    for drift in report.drift:
        click.echo(f"drift    {drift}")
    if not report.clean:
        sys.exit(1)


for _action in ("apply", "check"):
    def _make(action: str) -> click.Command:
        @click.command(name=action, help=f"{action.title()} the topology against a cluster.")
        @broker_option
        @config_option
        @click.option("--partitions", type=int, default=None)
        @click.option("--replication", type=int, default=None)
        @click.option("--app-id", default=None)
        def cmd(config: str | None, **overrides: Any) -> None:
            _topology_run(action, config, overrides)

        return cmd

    topology.add_command(_make(_action))


@click.command()
@click.option("--port", type=int, default=9092, show_default=True)
def broker(port: int) -> None:
    """Run the embedded Kafka-compatible broker (tansu, in memory) on 127.0.0.1 in the foreground."""
    from stream.service.broker import EmbeddedBroker

    b = EmbeddedBroker(port=port).start()
    click.echo(f"tansu broker on {b.bootstrap} (in memory). Use --broker {b.url}. Ctrl-C stops it.")
    try:
        while b.alive():
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        b.stop()


@click.command()
@click.argument("source", type=click.Path(allow_dash=True, dir_okay=False))
@broker_option
@config_option
@click.option("--topic", default=None, help="Default: the documents topic.")
@click.option("--quiet", "-q", is_flag=True)
def publish(source: str, config: str | None, broker: str | None, topic: str | None, quiet: bool) -> None:
    """Publish a JSONL file (or - for stdin) of documents, keyed by id (idempotent producer)."""
    from stream.service.producer import publish_lines

    settings = _settings(config, broker=broker)
    if not settings.broker:
        raise click.UsageError("--broker (or DEDUP_BROKER) is required")
    stream = sys.stdin if source == "-" else Path(source).open(encoding="utf-8")  # noqa: SIM115
    try:
        result = publish_lines(settings, stream, topic=topic, progress=not quiet and source != "-")
    finally:
        if stream is not sys.stdin:
            stream.close()
    click.echo(f"published {result.sent} documents to {result.topic}"
               + (f", {len(result.bad_lines)} bad lines skipped: {result.bad_lines[:10]}" if result.bad_lines else ""),
               err=True)
    if result.failed:
        raise click.ClickException(f"{result.failed} documents were not delivered")


@click.command()
@broker_option
@config_option
@click.option("--follow", "-f", is_flag=True, help="Keep reading new verdicts.")
@click.option("--json", "as_json", is_flag=True, help="JSON lines instead of a table.")
@click.option("--topic", default=None)
@click.option("--idle-timeout", type=float, default=5.0, show_default=True,
              help="Without --follow: stop after this long without new verdicts.")
def verdicts(config: str | None, broker: str | None, follow: bool, as_json: bool, topic: str | None,
             idle_timeout: float) -> None:
    """Read the verdict topic from the beginning: table or JSON lines, running counts, latency."""
    from stream.service.verdicts import tail

    settings = _settings(config, broker=broker)
    if not settings.broker:
        raise click.UsageError("--broker (or DEDUP_BROKER) is required")
    tail(settings, topic=topic or settings.verdicts_topic, follow=follow, as_json=as_json,
         idle_timeout=idle_timeout)


@click.command()
@click.option("--data", "data", default=None, type=click.Path(exists=True, dir_okay=False),
              help="JSONL documents (default: the bundled Tang poems + PEP sample).")
@click.option("--workers", type=int, default=1, show_default=True)
@click.option("--partitions", type=int, default=4, show_default=True)
@click.option("--keep-running", is_flag=True, help="Leave broker and worker up after the summary.")
def demo(data: str | None, workers: int, partitions: int, keep_running: bool) -> None:
    """Embedded broker + worker, publish a sample with real near-duplicates, show verdicts live."""
    from stream.service.demo import run_demo

    sys.exit(run_demo(data=data, workers=workers, partitions=partitions, keep_running=keep_running))
