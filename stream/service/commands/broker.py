"""``dedup broker``: the embedded broker in the foreground, found by the other commands."""

from __future__ import annotations

import signal
import time
from typing import Any

import click

from stream.errors import BrokerUnavailable, UsageError


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (the broker advertises it to clients).")
@click.option("--port", type=click.IntRange(1, 65535), default=9092, show_default=True, help="Port to listen on.")
def broker(host: str, port: int) -> None:
    """Run the embedded Kafka-compatible broker (tansu, in memory) in the foreground.

    Other dedup commands on this machine find it without --broker. SIGTERM or Ctrl-C stops it (and
    its tansu process)."""
    from stream.service.runtime.embedded import EmbeddedBroker, port_open

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
