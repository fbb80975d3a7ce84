"""``dedup worker | publish | verdicts | demo | topology | broker`` (loaded lazily by stream.cli)."""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

import click

from stream.errors import EXIT_BROKER, EXIT_REJECTED, BrokerUnavailable, ConfigError, UsageError
from stream.options import detection_options
from stream.service.settings import LOG_FORMATS, LOG_LEVELS, Settings, load_settings

NO_BROKER = ("no broker: pass --broker kafka://HOST:PORT (or set DEDUP_BROKER), or start a local one in "
             "another terminal with `dedup broker`")


def _settings(config: str | None, **overrides: Any) -> Settings:
    try:
        return load_settings(config, **overrides)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(str(exc)) from exc


def client_settings(config: str | None, **overrides: Any) -> Settings:
    """Settings for a command that talks to a broker: the configured one, else the one `dedup broker`
    runs here, else a clear error; then a check that it answers."""
    settings = _settings(config, **overrides)
    if not settings.broker:
        from stream.service.broker import running_broker_url

        found = running_broker_url()
        if found is None:
            raise UsageError(NO_BROKER)
        click.echo(f"using the broker started by `dedup broker`: {found}", err=True)
        settings = settings.with_overrides(broker=found)
    ensure_reachable(settings)
    return settings


def ensure_reachable(settings: Settings) -> None:
    """Raise ``BrokerUnavailable`` unless the broker answers a metadata request within the settings'
    ``connect_timeout``."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    timeout = settings.connect_timeout
    admin = AdminClient(settings.confluent())
    try:
        admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise BrokerUnavailable(f"no Kafka broker answers at {settings.bootstrap} (waited {timeout:.0f} s: "
                                f"{exc.args[0].str() if exc.args else exc}); check --broker / DEDUP_BROKER") from None


broker_option = click.option(
    "--broker", "-b", default=None, metavar="URL",
    help="kafka://HOST:PORT[,HOST:PORT] (env DEDUP_BROKER). Default: the broker `dedup broker` runs on this "
         "machine, if any.")
config_option = click.option("--config", "-c", "config", default=None, type=click.Path(dir_okay=False),
                             help="YAML settings file (env DEDUP_CONFIG).")


@click.command()
@click.option("--broker", "-b", default=None, metavar="URL",
              help="kafka://HOST:PORT[,HOST:PORT] (env DEDUP_BROKER). Default: start an embedded in-memory "
                   "broker for this worker alone.")
@config_option
@click.option("--data-dir", type=click.Path(file_okay=False), default=None,
              help="RocksDB state of this worker (DEDUP_DATA_DIR; default ./dedup-data).")
@click.option("--app-id", default=None, help="Consumer group and topic-name prefix (DEDUP_APP_ID; default dedup).")
@click.option("--partitions", type=click.IntRange(1), default=None,
              help="Partitions of every topic, fixed once topics exist (DEDUP_PARTITIONS; default 8).")
@click.option("--batch-size", type=click.IntRange(1), default=None,
              help="Documents per agent batch (DEDUP_BATCH_SIZE; default 256).")
@click.option("--metrics-port", type=click.IntRange(1, 65535), default=None,
              help="Serve Prometheus metrics and /health, /ready on this port (DEDUP_METRICS_PORT).")
@click.option("--metrics-host", default=None,
              help="Address the metrics port binds to (DEDUP_METRICS_HOST; default 127.0.0.1; 0.0.0.0 in a container).")
@click.option("--loglevel", "log_level", type=click.Choice(LOG_LEVELS), default=None,
              help="Log level (DEDUP_LOG_LEVEL; default warning).")
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default=None,
              help="text, or json: one object a line with time, level, logger, message (DEDUP_LOG_FORMAT; "
                   "default text).")
@click.option("--late-allowance", default=None,
              help="With --retention: how late (event time) a document may arrive and still find every entry it "
                   "should; older entries are deleted (DEDUP_LATE_ALLOWANCE; default 1h).")
@detection_options(worker=True)
def worker(config: str | None, **overrides: Any) -> None:
    """Run a dedup worker: documents in, verdicts out. Scale by starting more with the same app id."""
    from stream.service.worker import run_worker

    settings = _settings(config, **overrides)
    sys.exit(run_worker(settings, lambda m: click.echo(m, err=True)))


@click.command()
@click.option("--data-dir", type=click.Path(file_okay=False, exists=True), required=True,
              help="The worker's data dir (DEDUP_DATA_DIR of the worker).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def reset(data_dir: str, yes: bool) -> None:
    """Delete a stopped worker's local state, so that it starts from scratch: after the broker lost its data,
    or to rebuild every table from the changelogs. Refused while a worker uses the data dir."""
    from pathlib import Path

    from stream.service.datadir import claim_data_dir
    from stream.service.worker import reset_data_dir

    path = Path(data_dir)
    if not any((path / name).exists() for name in ("v1", "dedup.lock", "READY", "BROKER_DATA_LOST")):
        raise UsageError(f"{path} does not look like a dedup worker's data dir: nothing deleted")
    lock = claim_data_dir(path)
    try:
        if not yes:
            click.confirm(f"delete every table and marker in {path}?", abort=True, err=True)
        removed = reset_data_dir(path)
    finally:
        lock.release()
    click.echo(f"reset {path}: removed {', '.join(removed) or 'nothing'}", err=True)


@click.group()
def topology() -> None:
    """Create missing topics (apply) or report drift (check), from topology/topics.yaml."""


def _topology_run(action: str, config: str | None, overrides: dict[str, Any]) -> None:
    from topology import admin

    settings = client_settings(config, **overrides)
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
        sys.exit(EXIT_REJECTED)


_TOPOLOGY_HELP = {
    "apply": "Create the topics the topology names that the cluster lacks; report drift. Exit 1 on drift.",
    "check": "Report missing topics and drift (partitions, configs) without changing anything. Exit 1 if any.",
}

for _action in ("apply", "check"):
    def _make(action: str) -> click.Command:
        @click.command(name=action, help=_TOPOLOGY_HELP[action])
        @broker_option
        @config_option
        @click.option("--partitions", type=click.IntRange(1), default=None,
                      help="Partitions of every topic (DEDUP_PARTITIONS; default 8).")
        @click.option("--replication", type=click.IntRange(1), default=None,
                      help="Replication factor of every topic (DEDUP_REPLICATION; default 1).")
        @click.option("--app-id", default=None, help="Topic-name prefix of internal topics (DEDUP_APP_ID).")
        def cmd(config: str | None, **overrides: Any) -> None:
            _topology_run(action, config, overrides)

        return cmd

    topology.add_command(_make(_action))


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (the broker advertises it to clients).")
@click.option("--port", type=click.IntRange(1, 65535), default=9092, show_default=True, help="Port to listen on.")
def broker(host: str, port: int) -> None:
    """Run the embedded Kafka-compatible broker (tansu, in memory) in the foreground.

    Other dedup commands on this machine find it without --broker. SIGTERM or Ctrl-C stops it (and
    its tansu process)."""
    from stream.service.broker import EmbeddedBroker, port_open

    if port_open(host, port):
        raise UsageError(f"{host}:{port} is already in use (pick another --port)")
    b = EmbeddedBroker(port=port, host=host).start()
    b.register()

    def stop(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    click.echo(f"tansu broker on {b.bootstrap} (in memory). Use --broker {b.url}. Ctrl-C stops it.", err=True)
    try:
        while b.alive():
            time.sleep(0.5)
        raise BrokerUnavailable("the tansu process exited")
    except KeyboardInterrupt:
        pass
    finally:
        b.stop()


@click.command()
@click.argument("source", type=click.Path(exists=True, allow_dash=True, dir_okay=False))
@broker_option
@config_option
@click.option("--topic", default=None,
              help="Topic to publish to (default: the documents topic, DEDUP_DOCUMENTS_TOPIC).")
@click.option("--max-message-bytes", type=click.IntRange(1024), default=None,
              help="Largest document accepted, in bytes (DEDUP_MAX_MESSAGE_BYTES; default 1,000,000, Kafka's "
                   "default message.max.bytes). Raise it together with the topic's max.message.bytes.")
@click.option("--errors", "errors_file", type=click.Path(dir_okay=False), default=None,
              help="Also write each rejected line as a JSON line {line, error} to this file.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar (it only shows on a terminal anyway).")
def publish(source: str, config: str | None, broker: str | None, topic: str | None, max_message_bytes: int | None,
            errors_file: str | None, quiet: bool) -> None:
    """Publish a JSONL file (or - for stdin) of documents, keyed by id (idempotent producer).

    Every line that is not a valid document (not UTF-8, not JSON, no id, too large...) is reported with
    its line number and reason and skipped; every other line is delivered. Exit 1 if any line was
    rejected, 4 if some documents could not be delivered."""
    from stream.service.producer import publish_file

    settings = client_settings(config, broker=broker, max_message_bytes=max_message_bytes)
    result = publish_file(settings, source, topic=topic, progress=not quiet and sys.stderr.isatty(),
                          errors_file=errors_file)
    rejected = f", {len(result.rejected)} lines rejected" if result.rejected else ""
    failed = f", {result.failed} not delivered" if result.failed else ""
    click.echo(f"published {result.delivered} documents to {result.topic}{rejected}{failed}", err=True)
    if result.failed:
        sys.exit(EXIT_BROKER)
    if result.rejected:
        sys.exit(EXIT_REJECTED)


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
    from stream.service.verdicts import tail

    settings = client_settings(config, broker=broker)
    tail(settings, topic=topic or settings.verdicts_topic, follow=follow, as_json=as_json,
         idle_timeout=idle_timeout)


@click.command()
@click.option("--data", "data", default=None, type=click.Path(exists=True, dir_okay=False),
              help="JSONL documents (default: the bundled sample of Tang poems with real near-duplicates).")
@click.option("--workers", type=click.IntRange(1, 8), default=1, show_default=True, help="Worker processes.")
@click.option("--partitions", type=click.IntRange(1), default=4, show_default=True, help="Partitions per topic.")
@click.option("--keep-running", is_flag=True, help="Leave broker and worker up after the summary.")
def demo(data: str | None, workers: int, partitions: int, keep_running: bool) -> None:
    """Embedded broker + worker, publish a sample with real near-duplicates, show verdicts live."""
    from stream.service.demo import run_demo

    sys.exit(run_demo(data=data, workers=workers, partitions=partitions, keep_running=keep_running))
