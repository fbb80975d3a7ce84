"""``python -m benchmarks reliability``: the fault scenarios at size, on the embedded broker with real worker
processes (README, "Faults"; the same faults the integration tests try at small size).

Scenarios (``--scenarios``; sizes for ``--size full``, ``--size small`` in brackets):
- ``fuzz``: 10,000 [1,000] bad messages (benchmarks/poison.py: not JSON, not UTF-8, binary, not an
  object, wrong types, deep nesting, 1-3 MB, nulls, NaN, bad ts, ids too long, invalid Unicode) at
  random places among 2,000 [200] poems;
- ``sigkill``: 50,000 [3,000] documents as a backlog, the worker SIGKILLed when 30% and 70% have a
  verdict, restarted on the same data dir each time;
- ``full-disk``: 20,000 [2,000] documents, the worker's data dir on a 3 MB [1 MB] tmpfs (it must exit
  75), then the tmpfs grown to 4 GB and the worker restarted on it;
- ``broker-pause``: 20,000 [2,000] documents, the broker SIGSTOPped for 45 s [15 s] when a quarter have
  a verdict, then SIGCONT; the worker's log lines during the outage are counted;
- ``copies``: 1,000 [200] identical copies of one poem, in an order that is not the canonical one;
- ``deliveries``: one id delivered 300 times within a second after 500 [100] other poems.

For each: input records, verdicts, dead letters, superseded, unaccounted (the goal: 0) and whether the
final verdict table (verdict, canonical and match ids per id) equals the uninterrupted answer: the
single-process ``reference`` on the same documents (the integration tests check that one worker without
a fault gives exactly that). Documents are the 20,000 Tang poems of ../shared/corpora with event times
0, 1, 2, ... (tang.py: beyond 20,000, each a poem followed by another; for the backlog, the poems again
with a character substitution of each round's own). Results:
bench-results/reliability[-small].json; worker logs stay in the printed temp directory.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from benchmarks.common import DEFAULT_OUT, commit, save_json
from benchmarks.reliability_backlog import backlog_chart
from benchmarks.reliability_run import SIZES, Run
from benchmarks.reliability_scenarios import SCENARIOS, timed
from benchmarks.tang import tang_poems
from tests.harness import load

COLUMNS = [("scenario", 13), ("inputs", 8), ("verdicts", 9), ("dead", 7), ("superseded", 10), ("unaccounted", 11),
           ("= uninterrupted", 16), ("time s", 7)]


def table_lines(results: list[dict[str, Any]]) -> list[str]:
    """The summary table, one line per scenario, then each scenario's own figures."""
    head = " ".join(f"{name:>{width}}" for name, width in COLUMNS)
    lines = [head, "-" * len(head)]
    for r in results:
        if "error" in r or "skipped" in r:
            lines.append(f"{r['scenario']:>13} {'ERROR' if 'error' in r else 'skipped'}: "
                         f"{(r.get('error') or r.get('skipped', '')).splitlines()[0][:150]}")
            continue
        if "accounting_error" in r:
            lines.append(f"{r['scenario']:>13} all {r['ids_judged']:,} ids judged, final accounting failed: "
                         f"{r['accounting_error'][:150]}")
            continue
        if "stopped_after_s" in r:
            lines.append(f"{r['scenario']:>13} stopped after {r['stopped_after_s']:.0f} s: {r['ids_judged']:,} of "
                         f"{r['documents']:,} ids judged (no final accounting)")
            continue
        c = r.get("compare")
        same = "n/a" if c is None else "yes" if r["equal"] else f"no: {c['differing']} differ, {c['missing']} missing"
        cells = [r["scenario"], f"{r['inputs']:,}", f"{r['verdicts']:,}", f"{r['dead_letters']:,}",
                 f"{r['superseded']:,}", f"{r['unaccounted']:,}", same, f"{r['seconds']:.0f}"]
        lines.append(" ".join(f"{cell:>{width}}" for cell, (_, width) in zip(cells, COLUMNS, strict=True)))
    lines.append("")
    lines += [f"{r['scenario']}: {detail(r)}" for r in results if "error" not in r and "skipped" not in r]
    return lines


def detail(r: dict[str, Any]) -> str:
    """The figures a scenario has beyond the accounting."""
    name = r["scenario"]
    if name == "fuzz":
        return (f"{r['bad_messages']:,} bad messages ({r['bad_bytes'] / 1e6:.0f} MB), bad with a verdict "
                f"{sum(r['bad_with_a_verdict'].values())}, worker alive {r['worker_alive']}, largest dead letter "
                f"{r['largest_dead_letter']:,} B, tracebacks in logs {r['tracebacks_in_logs']}")
    if name == "sigkill":
        at = ", ".join(f"{k['ids_with_a_verdict']:,}" for k in r["kills"])
        return f"SIGKILL at {at} documents judged; {r['verdict_records']:,} verdict records (re-reads repeat some)"
    if name == "full-disk":
        return (f"{r['disk']} tmpfs: exit code {r['exit_code']} after {r['exit_after_s']} s with "
                f"{r['judged_before_exit']:,} judged; cause logged: {r['cause_line']!r}; restart said unclean stop: "
                f"{r['restart_said_unclean']}")
    if name in ("two-keys", "two-keys-sigkill"):
        killed = r["ids_with_a_verdict_at_sigkill"]
        return (f"{r['final_from_newest']}/{r['ids']} final verdicts from the newest version, "
                f"{r['verdict_records_per_id']} verdict records per id"
                + (f", SIGKILL at {killed:,} ids judged" if killed is not None else ""))
    if name == "backlog":
        growth, peak_growth = r["rss_growth_last_40_percent"], r.get("rss_peak_growth_last_40_percent")
        tail = r.get("rss_growth_last_100k")
        unaccounted = "stopped_after_s" in r or "accounting_error" in r
        records = ("" if unaccounted else f"{r['verdict_records_per_id']} verdict records per id (most "
                   f"{r['most_verdict_records_for_an_id']}), ")
        return (f"{r.get('ids_judged', r['documents']):,} documents: {records}false stalls {r['false_stalls']}, "
                f"gaps {r['gaps']}, RSS "
                f"{(r['rss_last'] or 0) / 2**20:,.0f} MiB at the end, "
                f"{'n/a' if growth is None else f'{growth:+.1%}'} over the last 40% of the documents (high-water "
                f"mark {(r.get('rss_peak') or 0) / 2**20:,.0f} MiB, "
                f"{'n/a' if peak_growth is None else f'{peak_growth:+.1%}'}; the last 100,000 documents "
                f"{'n/a' if tail is None else f'{tail:+.1%}'}), worker CPU "
                f"{r.get('worker_cpu_ms_per_document')} ms per document")
    if name in ("broker-pause", "broker-outage"):
        exits = ", ".join(f"{e['code']} at {e['at_s']:.0f} s" for e in r["worker_exits"]) or "none"
        return (f"{r['pause_s']:.0f} s SIGSTOP at {r['judged_at_pause']:,} judged: {r['log_lines_during']} log lines "
                f"during the outage {r['log_levels_during']}, /health during {r['health_during'][0]}, after "
                f"{r['health_after']}, first verdict {r['first_verdict_after_resume_s']} s after SIGCONT; worker "
                f"exits (restarted on 75 and 4): {exits}")
    if name == "copies":
        return (f"{r['verdict_records']:,} verdict records, {r['revisions']:,} revisions, "
                f"{r['revision_entries']:,.0f} internal revision entries for {r['revised_pairs']:,.0f} revised pairs, "
                f"largest verdict "
                f"{r['largest_verdict_bytes']:,} B (at most {r['most_matches_listed']} matches listed), "
                f"match_count right {r['match_count_right']:,}/{r['inputs']:,}")
    if name == "deliveries":
        return (f"{r['deliveries']} deliveries published in {r['published_in_s']} s, {r['verdict_records_for_the_id']} "
                f"verdict records for the id, final verdict {r['final_verdict']}")
    return ""


@click.command()
@click.option("--size", type=click.Choice(sorted(SIZES)), default="full", show_default=True,
              help="full: the sizes docs/service.md lists (~23 min on 2 cores, 8 of them the backlog); "
                   "small: a quick run (~4 min).")
@click.option("--scenarios", default=",".join(SCENARIOS), show_default=True,
              help="Comma-separated scenarios to run.")
@click.option("--out", "out_dir", default=DEFAULT_OUT, show_default=True, help="Where the JSON goes.")
@click.option("--backlog-docs", type=click.IntRange(min=100), default=None,
              help="Documents of the backlog scenario (default: the size's, 250,000 in full).")
@click.option("--backlog-seconds", type=click.FloatRange(min=60), default=None,
              help="Stop the backlog's judging after this many seconds and report the memory figures so far "
                   "(no final accounting): a long backlog within a time budget.")
def command(size: str, scenarios: str, out_dir: str, backlog_docs: int | None, backlog_seconds: float | None
            ) -> None:
    """Every input record accounted for under faults: poison, SIGKILL, full disk, broker pause, hot ids."""
    names = [s.strip() for s in scenarios.split(",") if s.strip()]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise click.BadParameter(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}",
                                 param_hint="--scenarios")
    tmp = Path(tempfile.mkdtemp(prefix="dedup-reliability-"))
    scale = replace(SIZES[size], backlog_docs=backlog_docs or SIZES[size].backlog_docs, backlog_seconds=backlog_seconds)
    run = Run(tang_poems(), scale, tmp, echo=lambda m: click.echo(m, err=True))
    click.echo(f"reliability ({size}) on commit {commit()}; worker logs in {tmp}", err=True)
    started = time.perf_counter()
    results = []
    for name in names:
        click.echo(f"{name} ...", err=True)
        results.append(timed(run, name))
        click.echo("\n".join(table_lines(results[-1:])[2:3]), err=True)
    total = time.perf_counter() - started
    lines = table_lines(results)
    click.echo("\n".join(lines))
    click.echo(f"total {total / 60:.1f} min, load after {load()}")
    path = save_json(out_dir, "reliability" if size == "full" else f"reliability-{size}", {
        "commit": commit(), "size": size, "scale": vars(scale), "total_seconds": round(total, 1),
        "worker_logs": str(tmp), "table": lines, "scenarios": results})
    click.echo(f"wrote {path}")
    for result in results:
        if result["scenario"] == "backlog" and "rss_samples" in result:
            backlog_chart(result, path.with_suffix(".png"))
            click.echo(f"wrote {path.with_suffix('.png')}")
