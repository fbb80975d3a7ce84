"""``python -m benchmarks NAME``: the benchmarks' command line, each subcommand loaded lazily."""

from __future__ import annotations

import sys

import click

from stream.cli import LazyGroup, run

COMMANDS: dict[str, str] = {
    "accuracy": "benchmarks.accuracy:command",
    "fingerprint": "benchmarks.fingerprint:command",
    "index": "benchmarks.index:command",
    "e2e": "benchmarks.e2e:command",
    "crawl-tracks": "benchmarks.web.tracks:command",
    "edge-tracks": "benchmarks.web.edges:command",
    "edges": "benchmarks.edges:command",
    "boilerplate": "benchmarks.boilerplate:command",
    "crawl": "benchmarks.web.evaluate:command",
    "html": "benchmarks.html:command",
    "tracks": "benchmarks.track_build:command",
    "shingling": "benchmarks.shingling:command",
    "corpus-zh": "benchmarks.corpus_zh:command",
    "scan": "benchmarks.scan:command",
    "anchor-table": "benchmarks.anchor_table:command",
    "peers": "benchmarks.peers:command",
    "reliability": "benchmarks.reliability:command",
    "retention": "benchmarks.retention:command",
    "scale": "benchmarks.scale:command",
    "table-store": "benchmarks.table_store:command",
    "layout": "benchmarks.layout:command",
    "repartition": "benchmarks.repartition:command",
}


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Benchmarks: print figures and save JSON + PNG under bench-results/."""


if __name__ == "__main__":
    run(sys.argv[1:], group=main, prog_name="python -m benchmarks")
