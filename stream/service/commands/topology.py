"""``dedup topology apply | check``: the topics of topology/topics.yaml against a cluster."""

from __future__ import annotations

import sys
from typing import Any

import click

from stream.errors import EXIT_REJECTED
from stream.service.commands.common import broker_option, client_settings, config_option


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
                      help="Partitions of the documents, verdict and dead-letter topics (DEDUP_PARTITIONS; "
                           "default 8).")
        @click.option("--index-partitions", type=click.IntRange(1), default=None,
                      help="Partitions of the internal topics and tables (DEDUP_INDEX_PARTITIONS; default 2).")
        @click.option("--replication", type=click.IntRange(1), default=None,
                      help="Replication factor of every topic (DEDUP_REPLICATION; default 1).")
        @click.option("--app-id", default=None, help="Topic-name prefix of internal topics (DEDUP_APP_ID).")
        def cmd(config: str | None, **overrides: Any) -> None:
            _topology_run(action, config, overrides)

        return cmd

    topology.add_command(_make(_action))
