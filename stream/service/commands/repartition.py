"""``dedup repartition``: a new deployment with other partition counts from a stopped one's changelogs."""

from __future__ import annotations

from typing import Any

import click

from stream.service.commands.common import broker_option, client_settings, config_option


@click.command()
@broker_option
@config_option
@click.option("--from-app-id", "old_app_id", required=True, help="App id of the stopped deployment to read.")
@click.option("--app-id", required=True, help="App id of the new deployment (its consumer group and internal "
                                              "topics, which must not exist yet).")
@click.option("--index-partitions", type=click.IntRange(1), default=None,
              help="Index partitions of the new deployment (DEDUP_INDEX_PARTITIONS; default 2).")
@click.option("--partitions", type=click.IntRange(1), default=None,
              help="Partitions of the new deployment's documents, verdict and dead-letter topics (DEDUP_PARTITIONS; "
                   "default 8): another count needs another documents topic (--documents-topic).")
@click.option("--documents-topic", default=None,
              help="Documents topic of the new deployment (DEDUP_DOCUMENTS_TOPIC): the old one's, to go on "
                   "where it stopped; a new one is read from its start.")
@click.option("--verdicts-topic", default=None, help="Verdict topic of the new deployment (DEDUP_VERDICTS_TOPIC).")
@click.option("--dlq-topic", default=None, help="Dead-letter topic of the new deployment (DEDUP_DLQ_TOPIC).")
def repartition(config: str | None, old_app_id: str, **overrides: Any) -> None:
    """Build a new deployment's state with other partition counts from a stopped deployment's changelogs,
    without fingerprinting anything again; then start the new deployment's workers (docs/usage.md,
    "Growing past the partition counts")."""
    from stream.service.changelog_copy import repartition as run

    settings = client_settings(config, **overrides)

    def say(message: str) -> None:
        click.echo(message, err=True)

    report = run(old_app_id, settings, say)
    written = ", ".join(f"{n} to {topic}" for topic, n in sorted(report.written.items()))
    seconds = ", ".join(f"{k} {v:.1f} s" for k, v in report.seconds.items())
    click.echo(f"{old_app_id} ({report.old_partitions} partitions, {report.old_index_partitions} index partitions) -> "
               f"{settings.app_id} ({settings.partitions}, {settings.index_partitions}): {report.documents} indexed "
               f"documents, {report.gather_states} gather states; records written: {written}; "
               f"documents topic positions {report.positions or 'none (read from the start)'}; {seconds}")
