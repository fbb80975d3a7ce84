"""``dedup broker``: the embedded broker in the foreground, found by the other commands."""

from __future__ import annotations

import time

import click

from stream.errors import BrokerUnavailable, UsageError
from stream.service.commands.common import until_stopped

DEFAULT_PORT = 19092


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (the broker advertises it to clients).")
@click.option("--port", type=click.IntRange(1, 65535), default=DEFAULT_PORT, show_default=True,
              help="Port to listen on (not Kafka's 9092, so that it never takes the place of a real Kafka).")
def broker(host: str, port: int) -> None:
    """Run the embedded Kafka-compatible broker (tansu, in memory) in the foreground.

    Other dedup commands of the same user find it without --broker: it is recorded in
    $XDG_RUNTIME_DIR/dedup-UID/broker.json (/tmp/dedup-UID/broker.json without XDG_RUNTIME_DIR; set
    DEDUP_BROKER_REGISTRY for another file, e.g. a second broker). SIGTERM or Ctrl-C stops it (and
    its tansu process)."""
    from stream.service.runtime.embedded import EmbeddedBroker, port_open, registry_path, running_broker_url

    running = running_broker_url()
    if running is not None:
        raise UsageError(f"`dedup broker` already runs {running} (recorded in {registry_path()}): use it, or set "
                         "DEDUP_BROKER_REGISTRY to another file to run a second one")
    if port_open(host, port):
        raise UsageError(f"{host}:{port} is already in use (pick another --port)")
    b = EmbeddedBroker(port=port, host=host).start()
    b.register()

    click.echo(f"tansu broker on {b.bootstrap} (in memory). Use --broker {b.url}. Ctrl-C stops it.", err=True)
    try:
        with until_stopped() as stopped:
            while not stopped():
                if not b.alive():
                    raise BrokerUnavailable("the tansu process exited")
                time.sleep(0.5)
    except KeyboardInterrupt:  # a second Ctrl-C
        pass
    finally:
        b.stop()
