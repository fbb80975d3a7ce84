"""What the commands share: their settings (with the broker found or a clear error) and options."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from stream.errors import ConfigError, UsageError
from stream.service.runtime.connect import ensure_reachable
from stream.service.settings import Settings, load_settings

NO_BROKER = ("no broker: pass --broker kafka://HOST:PORT (or set DEDUP_BROKER), or start a local one in "
             "another terminal with `dedup broker`")


def settings_of(config: str | None, **overrides: Any) -> Settings:
    try:
        return load_settings(config, **overrides)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(str(exc)) from exc


def client_settings(config: str | None, **overrides: Any) -> Settings:
    """Settings for a command that talks to a broker: the configured one, else the one `dedup broker`
    runs here, else a clear error; then a check that it answers."""
    settings = settings_of(config, **overrides)
    if not settings.broker:
        from stream.service.runtime.embedded import running_broker_url

        found = running_broker_url()
        if found is None:
            raise UsageError(NO_BROKER)
        click.echo(f"using the broker started by `dedup broker`: {found}", err=True)
        settings = settings.with_overrides(broker=found)
    ensure_reachable(settings)
    return settings


broker_option = click.option(
    "--broker", "-b", default=None, metavar="URL",
    help="kafka://HOST:PORT[,HOST:PORT] (env DEDUP_BROKER). Default: the broker `dedup broker` runs on this "
         "machine, if any.")
config_option = click.option("--config", "-c", "config", default=None, type=click.Path(dir_okay=False),
                             help="YAML settings file (env DEDUP_CONFIG).")


@contextmanager
def until_stopped() -> Iterator[Callable[[], bool]]:
    """A flag that SIGINT (Ctrl-C) or SIGTERM raises, for a command that runs until stopped; a second
    signal interrupts at once. Installed whatever the process inherited: started in the background by
    a non-interactive shell (``nohup ... &``, some CI runners) it inherits SIGINT ignored, and Python then
    never turns Ctrl-C or ``kill -INT`` into KeyboardInterrupt: the command would run on for ever."""
    stopped = threading.Event()

    def stop(_signum: int, _frame: Any) -> None:
        if stopped.is_set():
            raise KeyboardInterrupt
        stopped.set()

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopped.is_set
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
