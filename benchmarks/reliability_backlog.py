"""``python -m benchmarks reliability`` backlog scenario: ``backlog_docs`` documents published before one worker
starts, from ``tang.cipher_stream`` (its candidates per document stay flat however long the stream, so the
worker's CPU per document does too). What it reports: verdict records per id (at most 2 without faults),
the ledger's false stalls and re-reads (none), and the worker's RSS over time (the last 100,000
documents should add < 10%)."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import cpu_seconds
from benchmarks.reliability_run import Run, encode
from benchmarks.tang import cipher_stream
from stream.service.stages.gather import REVISION_INTERVAL
from tests.harness import Deployment, VerdictWatch, accounted, publish, raw_values, settled_table


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def rereads(port: int) -> dict[str, int]:
    """The worker's input re-reads by kind (stall, gap, accepted), all agents together, from its
    /metrics: its log says each once, and a second one within 5 s is only counted in the next line."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    counts: dict[str, int] = {}
    for kind, value in re.findall(r'^dedup_input_rereads\{[^}]*kind="(\w+)"[^}]*\} (\S+)$', text, re.MULTILINE):
        counts[kind] = counts.get(kind, 0) + int(float(value))
    return counts


def judge_and_sample(pid: int, watch: VerdictWatch, ids: int, timeout: float, every: float = 10.0,
                     stop_after: float | None = None) -> list[tuple[float, int, int, float]]:
    """Wait until ``ids`` ids have a verdict, or ``stop_after`` s have passed; (seconds, ids with a
    verdict, RSS bytes, worker CPU seconds) every ``every`` s."""
    started = time.monotonic()
    samples: list[tuple[float, int, int, float]] = []
    while True:
        judged = watch.count()
        samples.append((round(time.monotonic() - started, 1), judged, rss_bytes(pid), round(cpu_seconds(pid), 1)))
        if judged >= ids or (stop_after is not None and time.monotonic() - started > stop_after):
            return samples
        if time.monotonic() - started > timeout:
            raise AssertionError(f"{judged}/{ids} ids with a verdict after {timeout:.0f} s")
        time.sleep(every)


def most_revised(per_id: dict[bytes | None, list[dict[str, Any]]], top: int = 5) -> list[dict[str, Any]]:
    """The ids with the most verdict records: each record's seconds after the first, match count and
    canonical (what the revisions changed, and how far apart they came)."""
    worst = sorted(per_id.items(), key=lambda item: -len(item[1]))[:top]
    return [{"id": (key or b"").decode(errors="replace"),
             "records": [[round(b["processed_at"] - bodies[0]["processed_at"], 2), b["match_count"], b["canonical"]]
                         for b in bodies]} for key, bodies in worst]


def backlog(run: Run) -> dict[str, Any]:
    n = run.scale.backlog_docs
    docs = cipher_stream(run.poems, n)
    ids = [doc["id"] for doc in docs]
    with run.deployment("backlog") as d:
        publish(d, [encode(doc) for doc in docs])
        run.echo(f"  backlog of {n:,} documents published")
        # the default revision interval (the harness's 1 s is for tests that read a final table at once)
        worker = d.start_worker("w", env={**run.worker_env, "DEDUP_REVISION_INTERVAL": f"{REVISION_INTERVAL:g}s"})
        watch = VerdictWatch(d)
        samples = judge_and_sample(worker.pid, watch, len(set(ids)), max(run.scale.timeout, n / 20),
                                   stop_after=run.scale.backlog_seconds)
        watch.close()
        judged = samples[-1][1]
        # the memory figures before the accounting, which takes minutes on a long backlog
        (d.tmp / "rss_samples.json").write_text(json.dumps(samples))
        figures = memory_figures(samples)
        mib = {key: round(figures[key] / 2**20) for key in ("rss_at_60_percent", "rss_last", "rss_peak")}
        run.echo(f"  {judged:,} judged in {samples[-1][0]:.0f} s: RSS MiB {mib}, worker CPU "
                 f"{figures['worker_cpu_ms_per_document']} ms per document")
        if judged < len(set(ids)):  # stopped by backlog_seconds: the memory figures, no final accounting
            run.echo(f"  stopped after {samples[-1][0]:.0f} s with {judged:,} of {len(set(ids)):,} ids judged")
            return {"documents": n, "stopped_after_s": samples[-1][0], "ids_judged": judged,
                    **stalls_and_gaps(d), **figures}
        found = stalls_and_gaps(d)  # before the accounting, which can fail: the worker's figures stay
        # reading a topic back ran at < 1,700 records a second (1M verdicts were not read within 600 s)
        read_timeout = max(600.0, n / 200)
        try:
            # the held revisions too: a backlog's go out a revision interval after the worker caught up
            settled_table(d, ids, run.scale.timeout, settle=2 * REVISION_INTERVAL + 5)
            records = [(k, json.loads(v)) for k, v in raw_values(d, d.verdicts, read_timeout) if v is not None]
            counts = accounted(d, n, read_timeout=read_timeout)
        except AssertionError as exc:  # the memory figures of a long run are kept, the accounting's failure said
            run.echo(f"  final accounting failed: {exc}")
            return {"documents": n, "ids_judged": judged, "accounting_error": str(exc)[:500], **found, **figures}
    per_id: dict[bytes | None, list[dict[str, Any]]] = {}
    for key, body in records:
        per_id.setdefault(key, []).append(body)
    return {**counts, "documents": n, "verdict_records_per_id": round(len(records) / max(1, len(set(ids))), 3),
            "most_verdict_records_for_an_id": max(map(len, per_id.values()), default=0),
            "ids_by_verdict_records": dict(sorted(Counter(map(len, per_id.values())).items())),
            "most_revised": most_revised(per_id), **found, **figures}


def stalls_and_gaps(d: Deployment) -> dict[str, int]:
    """The ledger's false stalls and gaps: from worker w's log and its /metrics."""
    reread = rereads(d.metrics_ports["w"])
    log = (d.tmp / "w.log").read_text(errors="replace")
    return {"false_stalls": max(log.count("nothing was delivered"), reread.get("stall", 0)),
            "gaps": max(log.count("were skipped before"), reread.get("gap", 0))}


def rss_at(samples: list[tuple[float, int, int, float]], judged: float) -> int | None:
    """RSS at the first sample with at least ``judged`` ids judged (None: no such sample)."""
    return next((rss for _, count, rss, _ in samples if count >= judged), None)


def rss_by_share(samples: list[tuple[float, int, int, float]], tail: int = 100_000) -> dict[str, Any]:
    """RSS at 20, 40, 60, 80 and 100% of the ids judged, and what the last ``tail`` ids added: at the
    end against the sample at ``judged - tail``, and as the high-water mark after it against the one
    before (a single sample carries the memtables' flush sawtooth)."""
    judged, last = samples[-1][1], samples[-1][2]
    shares = {f"{p}%": rss_at(samples, p / 100 * judged) for p in (20, 40, 60, 80)}
    before = rss_at(samples, judged - tail) if judged > tail else None
    split = next((i for i, sample in enumerate(samples) if sample[1] >= judged - tail), 0)
    peak_before = max((sample[2] for sample in samples[:split + 1]), default=0)
    peak_after = max(sample[2] for sample in samples[split:])
    return {"rss_by_share": {**shares, "100%": last},
            f"rss_growth_last_{tail // 1000}k": round(last / before - 1, 3) if before else None,
            f"rss_peak_growth_last_{tail // 1000}k": round(peak_after / peak_before - 1, 3) if before else None}


def memory_figures(samples: list[tuple[float, int, int, float]]) -> dict[str, Any]:
    """RSS at 60% of the ids judged and at the end, the high-water marks up to 60% and overall, RSS by
    share of the ids judged and over the last 100,000, the worker's CPU per document over the whole
    run, and the samples themselves."""
    judged = samples[-1][1]
    at_60 = rss_at(samples, 0.6 * judged)
    last = samples[-1][2]
    # single samples carry the memtables' flush sawtooth (tens of MiB): the high-water marks too
    upto_60 = next((i for i, sample in enumerate(samples) if sample[1] >= 0.6 * judged), len(samples) - 1)
    peak_60 = max(sample[2] for sample in samples[:upto_60 + 1])  # the sample at 60% included
    peak = max(rss for _, _, rss, _ in samples)
    return {"rss_at_60_percent": at_60, "rss_last": last,
            "rss_growth_last_40_percent": round(last / at_60 - 1, 3) if at_60 else None,
            "rss_peak_to_60_percent": peak_60, "rss_peak": peak,
            "rss_peak_growth_last_40_percent": round(peak / peak_60 - 1, 3), **rss_by_share(samples),
            "worker_cpu_seconds": samples[-1][3],
            "worker_cpu_ms_per_document": round(1000 * samples[-1][3] / max(1, judged), 3),
            "rss_samples": samples, "seconds_to_last_verdict": samples[-1][0]}


def backlog_chart(result: dict[str, Any], path: Path) -> None:
    """The worker's RSS against the ids judged so far (the backlog scenario's samples)."""
    from benchmarks.common import pyplot, save_figure

    plt = pyplot()
    samples = result["rss_samples"]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([s[1] for s in samples], [s[2] / 2**20 for s in samples], marker=".")
    ax.set_xlabel("ids with a verdict")
    ax.set_ylabel("worker RSS (MiB)")
    # the worker's CPU per document between samples a minute apart (after its first verdict: warm-up and
    # group join before it): flat when its candidates per document are
    minutes = zip(samples[::6], samples[6::6], strict=False)
    cpu = [(b[1], 1000 * (b[3] - a[3]) / (b[1] - a[1])) for a, b in minutes if 0 < a[1] < b[1]]
    twin = ax.twinx()
    twin.plot([c[0] for c in cpu], [c[1] for c in cpu], color="tab:orange", alpha=0.7)
    twin.set_ylabel("worker CPU ms per document (per minute)", color="tab:orange")
    twin.set_ylim(bottom=0)
    how = (f"stopped after {result['stopped_after_s']:.0f} s" if "stopped_after_s" in result
           else "no final accounting" if "accounting_error" in result
           else f"{result['verdict_records_per_id']} verdict records per id")
    ax.set_title(f"backlog of {result['documents']:,} documents: RSS of one worker "
                 f"({result['false_stalls']} false stalls, {how})", fontsize=9)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    save_figure(fig, path, dpi=100)
    plt.close(fig)
