"""The ``dedup`` command line: one thin entry point; each subcommand lives beside the layer it drives.

Subcommands are loaded lazily (``module:attribute``) so that ``dedup scan`` never pays for importing
Faust, and so each layer owns its own command.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

# name -> "module:attribute" of a click.Command
COMMANDS: dict[str, str] = {
    "scan": "stream.batch.scan:command",
    "worker": "stream.service.cli:worker",
    "publish": "stream.service.cli:publish",
    "verdicts": "stream.service.cli:verdicts",
    "demo": "stream.service.cli:demo",
    "topology": "stream.service.cli:topology",
    "broker": "stream.service.cli:broker",
}
BENCH_COMMANDS: dict[str, str] = {
    "accuracy": "stream.bench.accuracy:command",
    "fingerprint": "stream.bench.fingerprint:command",
    "index": "stream.bench.index:command",
    "e2e": "stream.bench.e2e:command",
}


def _load(spec: str) -> click.Command:
    module, attr = spec.split(":")
    cmd = getattr(importlib.import_module(module), attr)
    assert isinstance(cmd, click.Command)
    return cmd


class LazyGroup(click.Group):
    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._lazy:
            return _load(self._lazy[cmd_name])
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="stream-dedup")
def main() -> None:
    """Near-duplicate detection for document streams (SimHash + MinHash LSH, Kafka)."""


@main.group(cls=LazyGroup, lazy=BENCH_COMMANDS)
def bench() -> None:
    """Benchmarks: print figures and save JSON + PNG under bench-results/."""
