"""Run one worker process: (the `dedup broker` of this machine, or an embedded broker, if none is
configured) -> topology apply -> Faust worker.

``dedup worker`` (stream/service/commands/worker.py) calls ``run_worker``; tests and benchmarks start
workers as ``python -m stream worker ...`` subprocesses.

Exit codes (``stream.errors``): 0 after a clean stop (SIGTERM/SIGINT, every output delivered); 3 a data
dir or settings problem; 4 no broker; 75 a fault that is not the input's (disk, producer): restart
it; 70 a bug. Only a clean stop is recorded as one (``LocalStateGuard``): after anything else the next
start rebuilds the local tables from the changelogs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stream.errors import EXIT_INTERNAL, ConfigError
from stream.service.runtime.datadir import claim_data_dir
from stream.service.runtime.embedded import EmbeddedBroker, running_broker_url
from stream.service.settings import Settings

log = logging.getLogger("dedup.worker")


# roles of the topics a worker reads or keeps state in: their partition counts decide which partition
# owns a document, a bucket, a gather state
_ROUTED_ROLES = {"input", "internal", "changelog"}


def apply_topology(settings: Settings, say: Callable[[str], None] = print) -> None:
    """Create the missing topics; refuse (``ConfigError``) a topic the worker reads whose partition count
    differs from the settings': Faust would co-partition it with the wrong topics, and a bucket or a
    document would be looked for in another partition than the one holding it."""
    from topology.admin import apply

    report = apply(settings.topology(), settings.confluent())
    if report.created:
        say(f"created topics: {', '.join(report.created)}")
    for drift in report.drift:
        say(f"topology drift: {drift}")
    wrong = [str(d) for d in report.drift if d.partitions and d.role in _ROUTED_ROLES]
    if wrong:
        raise ConfigError(f"topics differ from partitions={settings.partitions}, index_partitions="
                          f"{settings.index_partitions} ({'; '.join(wrong)}): run the workers with the counts "
                          "the topics were created with, or use a new app_id (new internal topics)")


def check_data_loss(settings: Settings, say: Callable[[str], None]) -> None:
    """Refuse a data dir marked by a worker that found the broker's data gone, unless told to rebuild."""
    from stream.service.runtime.recovery import DATA_LOSS_MARKER

    marker = Path(settings.data_dir) / DATA_LOSS_MARKER
    if not marker.exists():
        return
    if settings.on_broker_data_loss != "rebuild":
        lost = marker.read_text().strip()
        raise ConfigError(f"the broker lost data that the worker on {settings.data_dir} had ({lost}); to start "
                          f"from scratch: dedup reset --data-dir {settings.data_dir} (or set on_broker_data_loss: "
                          "rebuild)")
    reset_data_dir(Path(settings.data_dir))
    say(f"the broker lost data this worker had: {settings.data_dir} reset, starting from scratch")


def reset_data_dir(path: Path) -> list[str]:
    """Delete a worker's state in ``path`` (its lock file stays); returns what was removed."""
    import shutil

    from stream.service.runtime.datadir import LOCK_FILE

    removed = []
    for child in sorted(path.iterdir()):
        if child.name == LOCK_FILE:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
        removed.append(child.name)
    return removed


def run_worker(settings: Settings, say: Callable[[str], None] = print) -> int:
    from stream.service.runtime.connect import ensure_reachable
    from stream.service.runtime.patches import check_versions

    check_versions()  # before anything starts: the patches need the libraries they were checked against
    lock = claim_data_dir(Path(settings.data_dir))
    check_data_loss(settings, say)
    broker: EmbeddedBroker | None = None
    if not settings.broker:
        running = running_broker_url()
        if running is None:
            broker = EmbeddedBroker().start()
            say(f"no broker configured: started the embedded tansu broker on {broker.bootstrap} "
                "(in memory; nothing survives a restart). Set DEDUP_BROKER or --broker for a real cluster.")
        else:
            say(f"using the broker started by `dedup broker`: {running}")
        # tansu makes a consumer-group join wait the whole rebalance timeout
        settings = settings.with_overrides(broker=broker.url if broker else running,
                                           rebalance_timeout=min(settings.rebalance_timeout, 3.0))
    try:
        ensure_reachable(settings)
        apply_topology(settings, say)
        return _run_faust(settings, say)
    finally:
        if broker is not None:
            broker.stop()
        lock.release()


def _run_faust(settings: Settings, say: Callable[[str], None]) -> int:
    import faust

    from stream.service.runtime.app import DedupApp
    from stream.service.runtime.connect import broker_ping
    from stream.service.runtime.health import Health, serve
    from stream.service.runtime.logs import configure
    from stream.service.runtime.process_tuning import tune_gc
    from stream.service.runtime.recovery import LocalStateGuard

    health = Health(broker_ping(settings))
    dedup = DedupApp(settings, health)
    dedup.ready.clear("starting: waiting for the consumer group to assign partitions")  # a READY file left
    # by a killed worker says nothing about this one
    if settings.metrics_port:
        serve(health, settings.metrics_host, settings.metrics_port, settings.metrics_token)
    health.watch_broker()
    tune_gc()  # after start-up: what it built stays out of every collection
    guard = LocalStateGuard(dedup.app.conf.tabledir)
    if guard.begin():
        say("the last worker on this data dir did not stop cleanly: local tables dropped, "
            "rebuilding them from the changelogs")
    say(f"worker {settings.app_id}: {settings.broker}, data in {settings.data_dir}, "
        f"{settings.partitions} partitions, {settings.index_partitions} index partitions")

    class Worker(faust.Worker):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.spinner = None  # a terminal spinner writes escape codes into every log

        def on_setup_root_logger(self, logger: logging.Logger, level: int) -> None:
            super().on_setup_root_logger(logger, level)
            configure(logger, settings.log_format)

    worker = Worker(dedup.app, loglevel=settings.log_level, quiet=True)
    code: Any = EXIT_INTERNAL
    try:
        worker.execute_from_commandline()  # returns via SystemExit when the worker stops
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else EXIT_INTERNAL
    finally:
        dedup.ready.clear()
        health.stop()
        delivered = dedup.output.close()
        guard.end(clean=code == 0 and worker.crash_reason is None and delivered)
    return int(code)
