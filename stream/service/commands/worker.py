"""``dedup worker`` and ``dedup reset``."""

from __future__ import annotations

import sys
from typing import Any

import click

from stream.errors import UsageError
from stream.options import Duration, detection_options
from stream.service.commands.common import config_option, settings_of
from stream.service.settings import LOG_FORMATS, LOG_LEVELS


@click.command()
@click.option("--broker", "-b", default=None, metavar="URL",
              help="kafka://HOST:PORT[,HOST:PORT] (env DEDUP_BROKER). Default: the broker `dedup broker` runs "
                   "on this machine, if any, else an embedded in-memory broker for this worker alone.")
@config_option
@click.option("--data-dir", type=click.Path(file_okay=False), default=None,
              help="RocksDB state of this worker (DEDUP_DATA_DIR; default ./dedup-data).")
@click.option("--app-id", default=None, help="Consumer group and topic-name prefix (DEDUP_APP_ID; default dedup).")
@click.option("--partitions", type=click.IntRange(1), default=None,
              help="Partitions of the documents, verdict and dead-letter topics, fixed once topics exist "
                   "(DEDUP_PARTITIONS; default 8).")
@click.option("--index-partitions", type=click.IntRange(1), default=None,
              help="Partitions of the block index and the verdict state (the internal topics and tables), fixed "
                   "once topics exist (DEDUP_INDEX_PARTITIONS; default 2).")
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
@click.option("--late-allowance", type=Duration(), default=None,
              help="With --retention: how late (event time) a document may arrive and still find every entry it "
                   "should; older entries are deleted (DEDUP_LATE_ALLOWANCE; default 1h).")
@detection_options(worker=True)
def worker(config: str | None, **overrides: Any) -> None:
    """Run a dedup worker: documents in, verdicts out. Scale by starting more with the same app id."""
    from stream.service.runtime.worker_process import run_worker
    from stream.startup import lean_cache_loads

    lean_cache_loads()  # ~0.15 s less before the first verdict (stream.startup)
    settings = settings_of(config, **overrides)
    sys.exit(run_worker(settings, lambda m: click.echo(m, err=True)))


@click.command()
@click.option("--data-dir", type=click.Path(file_okay=False, exists=True), required=True,
              help="The worker's data dir (DEDUP_DATA_DIR of the worker).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
def reset(data_dir: str, yes: bool) -> None:
    """Delete a stopped worker's local state, so that it starts from scratch: after the broker lost its data,
    or to rebuild every table from the changelogs. Refused while a worker uses the data dir."""
    from pathlib import Path

    from stream.service.runtime.datadir import claim_data_dir
    from stream.service.runtime.worker_process import reset_data_dir

    path = Path(data_dir)
    if not yes and not sys.stdin.isatty():
        raise UsageError(f"dedup reset deletes the state in {path} and asks first, but there is no terminal to "
                         "ask on: pass --yes")
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
