"""``python -m benchmarks retention``: the index stays flat on an endless stream with retention on (README,
"Lifecycle").

The stream: the 20,000 Tang poems of ../shared/corpora and, beyond them, new documents made of two
poems each (tang.py), with event times advancing ``--step`` seconds a document, and after every
``--copy-every``-th document a near copy (the poem with the repeat note) of an earlier one: half of
them within the retention window of their original, half 1.2-4 windows later. The same stream goes,
at ``--rate`` documents/s, through one worker with ``DEDUP_RETENTION`` and through one without, each
on its own embedded broker. Every ``--sample-every`` seconds: documents in (published, and consumed
by the worker), the block table's document records and bucket entries (its RocksDB partitions read
as secondary instances: state_size.py) and their bytes on disk. Then:
- the rule: for every document, the matches the retention run lists must be exactly the matches the
  run without retention lists whose event times are within the window (documents whose lists were
  cut at ``max_matches`` are left out of the check);
- the near copies: found (the original among the copy's matches) within the window and beyond it.
With ``--scan`` the same stream also goes through ``dedup scan``'s core with a state directory, with
and without ``--retention`` (index documents and state bytes every 1,000 documents), and the scan's
verdicts are compared with the worker's.

The stream compresses event time (60 s a document at 400 documents/s: 24,000 times real time), so the
worker's default late allowance, 1h, is 60 documents here, less than the skew between its input
partitions: measured with 1h, 5 of 3,734 copies within the window were missed around one point of a
157,000-document stream where one documents partition ran 340-850 documents (2 s) behind another,
i.e. those copies arrived 6-14 h late in event time, which the README says may miss matches. The
bench's allowance is 1d (1,440 documents) so that the rule check measures the rule, not lateness.
Results: bench-results/retention.json and retention.png.
"""

from __future__ import annotations

import io
import json
import random
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from benchmarks.common import DEFAULT_OUT, commit, machine, pyplot, save_json, stamp
from benchmarks.state_size import state_size
from benchmarks.tang import near_copy, poem_stream, tang_poems
from stream.durations import parse_duration
from stream.service.runtime.embedded import EmbeddedBroker, free_port
from tests.harness import Deployment, disk_bytes, load, metric, publish, row, settled_table

Copy = tuple[str, str, float]  # copy id, original id, event-time gap in seconds


def retention_stream(poems: list[dict[str, Any]], n: int, step: float, window: float, every: int,
                     seed: int = 11) -> tuple[list[dict[str, Any]], list[Copy]]:
    """``n`` documents ``step`` seconds apart, and a near copy after every ``every``-th: alternately
    within ``window`` seconds of its original and 1.2-4 windows after it."""
    base = poem_stream(poems, n, step=step)
    rng = random.Random(seed)
    window_docs = int(window / step)
    docs: list[dict[str, Any]] = []
    copies: list[Copy] = []
    for i, doc in enumerate(base):
        docs.append(doc)
        if i == 0 or i % every:
            continue
        inside = (i // every) % 2 == 0
        lag = rng.randint(1, max(1, int(0.9 * window_docs))) if inside else rng.randint(
            int(1.2 * window_docs) + 1, 4 * window_docs)
        if lag > i:
            continue
        original = base[i - lag]
        copy = near_copy(original, f"{original['id']}@{i}", doc["ts"])
        docs.append(copy)
        copies.append((copy["id"], original["id"], lag * step))
    return docs, copies


class Sampler(threading.Thread):
    """Samples the worker's block table every ``interval`` seconds until ``stop``."""

    def __init__(self, data: Path, port: int, scratch: Path, interval: float, sent: list[int]) -> None:
        super().__init__(daemon=True)
        self.data, self.port, self.scratch, self.interval, self.sent = data, port, scratch, interval, sent
        self.samples: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.started = time.monotonic()
        self._stop_event = threading.Event()

    def sample(self) -> dict[str, Any]:
        size = state_size(self.data, self.scratch)
        return {"t": round(time.monotonic() - self.started, 1), "published": self.sent[0],
                "consumed": int(metric(self.port, "dedup_documents_total")),
                "expired": int(metric(self.port, "dedup_expired_total")), **asdict(size),
                "data_dir_bytes": disk_bytes([self.data])}

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            try:
                self.samples.append(self.sample())
            except Exception as exc:  # a partition opened or dropped mid-sample: the next one counts it
                self.errors.append(f"{type(exc).__name__}: {exc}")

    def stop(self) -> list[dict[str, Any]]:
        self._stop_event.set()
        self.join()
        self.samples.append(self.sample())
        return self.samples


def worker_run(name: str, docs: list[dict[str, Any]], env: dict[str, str], rate: float, interval: float,
               tmp: Path, timeout: float) -> dict[str, Any]:
    """The stream through one worker at ``rate`` documents/s, sampled; its final verdict table."""
    records = [(d["id"].encode(), json.dumps(d, ensure_ascii=False).encode()) for d in docs]
    with EmbeddedBroker(log_path=tmp / f"{name}-tansu.log") as broker:
        deployment = Deployment(broker, tmp / name)
        deployment.tmp.mkdir(parents=True, exist_ok=True)
        deployment.apply_topology()
        port = free_port()
        data = deployment.tmp / "data"
        try:
            deployment.start_worker("w", data=data, env={**env, "DEDUP_METRICS_PORT": str(port)})
            deployment.wait_ready(data, timeout)
            sent = [0]
            sampler = Sampler(data, port, tmp / f"{name}-secondary", interval, sent)
            sampler.start()
            started = time.monotonic()
            publish(deployment, records, rate=rate, sent=sent)
            fed_s = time.monotonic() - started
            table = settled_table(deployment, [d["id"] for d in docs], timeout)
            samples = sampler.stop()
        finally:
            deployment.stop()
    return {"samples": samples, "fed_s": round(fed_s, 1), "done_s": samples[-1]["t"], "sample_errors": sampler.errors,
            "table": table}


def scan_run(docs: list[dict[str, Any]], retention: float | None, state: Path, every: int = 1000
             ) -> dict[str, Any]:
    """The stream through ``dedup scan``'s core on a state directory, sampled every ``every`` documents."""
    from stream.batch.scan import scan_stream
    from stream.batch.scan_state import open_state
    from stream.detect import MatchSettings
    from stream.fingerprint import FingerprintConfig

    scan = open_state(str(state), FingerprintConfig(), MatchSettings(retention=retention))
    samples: list[dict[str, Any]] = []

    def lines() -> Iterator[tuple[int, bytes]]:
        for i, doc in enumerate(docs, start=1):
            yield i, json.dumps(doc, ensure_ascii=False).encode()
            if i % every == 0 or i == len(docs):
                samples.append({"documents_in": i, "index_documents": len(scan.detector.index),
                                "disk_bytes": disk_bytes([state])})

    out = io.StringIO()
    started = time.perf_counter()
    try:
        counts = scan_stream(scan, lines(), out)
    finally:
        scan.close()
    verdicts = [json.loads(line) for line in out.getvalue().splitlines()]
    return {"samples": samples, "seconds": round(time.perf_counter() - started, 1), "counts": dict(counts),
            "table": {v["id"]: v for v in verdicts}}


def rule_check(with_retention: dict[str, dict[str, Any]], without: dict[str, dict[str, Any]],
               ts: dict[str, float], window: float) -> dict[str, Any]:
    """Per document: the retention run's matches == the other run's matches within the window."""
    compared = equal = 0
    examples: list[dict[str, Any]] = []
    for doc_id, v in with_retention.items():
        full = without.get(doc_id)
        if full is None or full["match_count"] > len(full["matches"]) or v["match_count"] > len(v["matches"]):
            continue
        compared += 1
        got = {m["id"] for m in v["matches"]}
        want = {m["id"] for m in full["matches"] if abs(ts[m["id"]] - ts[doc_id]) <= window}
        equal += got == want
        if got != want and len(examples) < 3:
            examples.append({"id": doc_id, "with_retention": sorted(got), "expected": sorted(want)})
    return {"documents_compared": compared, "equal": equal, "examples": examples}


def copies_found(copies: list[Copy], table: dict[str, dict[str, Any]], window: float) -> dict[str, Any]:
    def found(copy_id: str, original: str) -> bool:
        return original in {m["id"] for m in table[copy_id]["matches"]}

    inside = [c for c in copies if c[2] <= window]
    beyond = [c for c in copies if c[2] > window]
    return {"within_window": len(inside), "found_within": sum(found(c, o) for c, o, _ in inside),
            "beyond_window": len(beyond), "found_beyond": sum(found(c, o) for c, o, _ in beyond)}


def halves(samples: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The samples of the first and the second half of the documents in: flat means the second half's
    range is no higher than the first's."""
    middle = samples[-1]["consumed"] / 2
    return [("first", [x for x in samples if x["consumed"] < middle]),
            ("second", [x for x in samples if x["consumed"] >= middle])]


def _span(samples: list[dict[str, Any]], key: str, unit: float = 1.0) -> str:
    values = [x[key] / unit for x in samples] or [0.0]
    return f"{min(values):,.0f}-{max(values):,.0f}"


def summary_lines(result: dict[str, Any]) -> list[str]:
    lines = []
    for name in ("retention", "none"):
        run = result["worker"][name]
        s = run["samples"]
        peak = max(s, key=lambda x: x["records"])
        lines.append(f"worker, retention {result['settings']['retention'] if name == 'retention' else 'none':>4}: "
                     f"{s[-1]['consumed']:,} documents in {run['done_s']:.0f} s; index records at the end "
                     f"{s[-1]['records']:,} (peak {peak['records']:,}), bucket entries {s[-1]['entries']:,}, "
                     f"block-table disk {s[-1]['disk_bytes'] / 1e6:.1f} MB (peak "
                     f"{max(x['disk_bytes'] for x in s) / 1e6:.1f} MB), expired {s[-1]['expired']:,}")
        for part, samples in halves(s):
            lines.append(f"  {part} half of the stream: index records {_span(samples, 'records')}, bucket entries "
                         f"{_span(samples, 'entries')}, disk {_span(samples, 'disk_bytes', 1e6)} MB")
    rule = result["rule_check"]
    lines.append(f"rule: matches with retention == matches without it within the window for {rule['equal']:,} of "
                 f"{rule['documents_compared']:,} documents")
    for name in ("retention", "none"):
        c = result["copies"][name]
        lines.append(f"near copies ({name}): within the window {c['found_within']}/{c['within_window']} found, "
                     f"beyond it {c['found_beyond']}/{c['beyond_window']} found")
    for name, scan in result.get("scan", {}).items():
        s = scan["samples"]
        lines.append(f"scan ({name}): {s[-1]['documents_in']:,} documents in {scan['seconds']:.0f} s, index documents "
                     f"{s[-1]['index_documents']:,} (peak {max(x['index_documents'] for x in s):,}), state "
                     f"{s[-1]['disk_bytes'] / 1e6:.1f} MB (peak {max(x['disk_bytes'] for x in s) / 1e6:.1f} MB)")
    if "scan_vs_worker" in result:
        sv = result["scan_vs_worker"]
        lines.append(f"scan --retention vs the worker with retention: {sv['equal']:,} of {sv['ids']:,} verdicts equal")
    return lines


def plot(result: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    (a, b), (c, d) = axes
    label = {"retention": f"retention {result['settings']['retention']}", "none": "no retention"}
    style = {"retention": "-", "none": "--"}
    for name, run in result["worker"].items():
        s = run["samples"]
        t = [x["t"] for x in s]
        a.plot(t, [x["consumed"] for x in s], "k" + style[name], label=f"documents in ({label[name]} run)")
        a.plot(t, [x["records"] for x in s], "C0" + style[name], label=f"index records, {label[name]}")
        b.plot(t, [x["entries"] for x in s], "C1" + style[name], label=f"bucket entries, {label[name]}")
        c.plot(t, [x["disk_bytes"] / 1e6 for x in s], "C2" + style[name], label=f"block-table disk MB, {label[name]}")
    for ax, title in ((a, "Worker: documents in and index records"), (b, "Worker: bucket entries"),
                      (c, "Worker: block-table RocksDB on disk (MB)")):
        ax.set_xlabel("seconds since the stream started")
        ax.set_title(title)
        ax.legend(fontsize=8)
    if "scan" in result:
        _plot_scan(d, result["scan"], label, style)
    else:
        d.set_visible(False)
    settings = result["settings"]
    fig.suptitle(f"Retention on an endless stream: {settings['documents']:,} documents, {settings['step']:.0f} s of "
                 f"event time apart, published at {settings['rate']:.0f}/s; retention {settings['retention']}, late "
                 f"allowance {settings['late_allowance']}", fontsize=10)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    stamp(fig)
    fig.savefig(path, dpi=100)


def _plot_scan(ax: Any, scans: dict[str, Any], label: dict[str, str], style: dict[str, str]) -> None:
    mb = ax.twinx()
    for name, scan in scans.items():
        s = scan["samples"]
        x = [p["documents_in"] for p in s]
        ax.plot(x, [p["index_documents"] for p in s], "C0" + style[name], label=f"index documents, {label[name]}")
        mb.plot(x, [p["disk_bytes"] / 1e6 for p in s], "C2" + style[name], label=f"state on disk MB, {label[name]}")
    ax.set_xlabel("documents in")
    ax.set_ylabel("index documents")
    mb.set_ylabel("MB on disk")
    ax.set_title("dedup scan --state on the same stream")
    lines, names = ax.get_legend_handles_labels()
    more, more_names = mb.get_legend_handles_labels()
    ax.legend(lines + more, names + more_names, fontsize=8)


def _matching_rows(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> dict[str, int]:
    return {"ids": len(a), "equal": sum(k in b and row(v) == row(b[k]) for k, v in a.items())}


@click.command()
@click.option("--documents", "-n", type=int, default=100_000, show_default=True,
              help="Documents in the stream (near copies come on top: one per --copy-every).")
@click.option("--rate", type=float, default=400.0, show_default=True, help="Documents published per second.")
@click.option("--retention", default="1d", show_default=True, help="DEDUP_RETENTION of the retention run.")
@click.option("--late-allowance", default="1d", show_default=True,
              help="DEDUP_LATE_ALLOWANCE of that run: more than the skew between input partitions, in event time "
                   "(see the module's doc).")
@click.option("--step", type=float, default=60.0, show_default=True, help="Event-time seconds between documents.")
@click.option("--copy-every", type=int, default=20, show_default=True, help="A near copy after every N-th document.")
@click.option("--sample-every", type=float, default=5.0, show_default=True, help="Seconds between samples.")
@click.option("--scan/--no-scan", default=True, show_default=True, help="Also run the stream through dedup scan.")
@click.option("--out", "out_dir", default=DEFAULT_OUT, show_default=True, help="Where the JSON and PNG go.")
def command(documents: int, rate: float, retention: str, late_allowance: str, step: float, copy_every: int,
            sample_every: float, scan: bool, out_dir: str) -> None:
    """Index records and disk bytes over time on a long stream, with and without retention."""
    window = parse_duration(retention, "retention")
    docs, copies = retention_stream(tang_poems(), documents, step, window, copy_every)
    ts = {d["id"]: d["ts"] for d in docs}
    tmp = Path(tempfile.mkdtemp(prefix="dedup-retention-"))
    echo = lambda m: click.echo(m, err=True)  # noqa: E731
    echo(f"retention on commit {commit()}: {len(docs):,} documents ({len(copies)} near copies) at {rate:.0f}/s; "
         f"logs in {tmp}")
    result: dict[str, Any] = {"commit": commit(), "machine": machine(), "load_before": load(), "settings": {
        "documents": len(docs), "rate": rate, "retention": retention, "late_allowance": late_allowance, "step": step,
        "copy_every": copy_every, "sample_every": sample_every}, "worker": {}}
    started = time.perf_counter()
    envs = {"retention": {"DEDUP_RETENTION": retention, "DEDUP_LATE_ALLOWANCE": late_allowance}, "none": {}}
    tables = {}
    for name, env in envs.items():
        echo(f"worker, {name} ...")
        run = worker_run(name, docs, {"DEDUP_BATCH_SIZE": "256", **env}, rate, sample_every, tmp, 900 + len(docs) / 50)
        tables[name] = run.pop("table")
        result["worker"][name] = run
    result["rule_check"] = rule_check(tables["retention"], tables["none"], ts, window)
    result["copies"] = {name: copies_found(copies, tables[name], window) for name in tables}
    if scan:
        result["scan"] = {}
        for name, limit in (("retention", window), ("none", None)):
            echo(f"scan, {name} ...")
            out = scan_run(docs, limit, tmp / f"scan-{name}")
            scan_table = out.pop("table")
            result["scan"][name] = out
            if name == "retention":
                result["scan_vs_worker"] = _matching_rows(scan_table, tables["retention"])
    result["load_after"] = load()
    result["total_seconds"] = round(time.perf_counter() - started, 1)
    lines = summary_lines(result)
    click.echo("\n".join(lines))
    click.echo(f"total {result['total_seconds'] / 60:.1f} min, load before {result['load_before']}, after "
               f"{result['load_after']}")
    result["summary"] = lines
    path = save_json(out_dir, "retention", result)
    plot(result, Path(out_dir) / "retention.png")
    click.echo(f"wrote {path} and {Path(out_dir) / 'retention.png'}")
