"""Run one worker process: (embedded broker if none configured) -> topology apply -> Faust worker.

``python -m stream.service.worker [--broker URL] [--data-dir DIR] ...`` is the same as
``dedup worker``; tests and the benchmark start workers this way as subprocesses.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from stream.service.broker import EmbeddedBroker
from stream.service.settings import Settings

log = logging.getLogger("dedup.worker")


def apply_topology(settings: Settings, say: Callable[[str], None] = print) -> None:
    from topology.admin import apply

    report = apply(settings.topology(), settings.confluent())
    if report.created:
        say(f"created topics: {', '.join(report.created)}")
    for drift in report.drift:
        say(f"topology drift: {drift}")


def run_worker(settings: Settings, say: Callable[[str], None] = print) -> int:
    broker: EmbeddedBroker | None = None
    if not settings.broker:
        broker = EmbeddedBroker().start()
        settings = settings.with_overrides(broker=broker.url, rebalance_timeout=min(settings.rebalance_timeout, 3.0))
        say(f"no broker configured: started the embedded tansu broker on {broker.bootstrap} "
            "(in memory; nothing survives a restart). Set DEDUP_BROKER or --broker for a real cluster.")
    try:
        apply_topology(settings, say)
        if settings.metrics_port:
            from stream.service.metrics import serve

            serve(settings.metrics_port)
        import faust

        from stream.service.app import DedupApp
        from stream.service.faust_tuning import tune_gc
        from stream.service.recovery import LocalStateGuard

        dedup = DedupApp(settings)
        tune_gc()  # after start-up: what it built stays out of every collection
        guard = LocalStateGuard(dedup.app.conf.tabledir)
        if guard.begin():
            say("the last worker on this data dir did not stop cleanly: local tables dropped, "
                "rebuilding them from the changelogs")
        say(f"worker {settings.app_id}: {settings.broker}, data in {settings.data_dir}, "
            f"{settings.partitions} partitions")
        worker = faust.Worker(dedup.app, loglevel=settings.log_level, quiet=True)
        try:
            worker.execute_from_commandline()  # returns via SystemExit when the worker stops
        finally:
            dedup.ready.path.unlink(missing_ok=True)
            guard.end(clean=dedup.output.close())
        return 0
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else 0
    finally:
        if broker is not None:
            broker.stop()


def main(argv: list[str] | None = None) -> None:
    from stream.service.cli import worker

    worker.main(args=argv if argv is not None else sys.argv[1:], prog_name="dedup worker")


if __name__ == "__main__":
    main()
