"""``dedup bench e2e``: documents/s and verdict latency through the real pipeline on the embedded
broker, next to a pass-through Faust agent (consume JSON, send JSON) in the same run; 1 vs 2 workers.

Throughput: a backlog of N documents is published first, then the workers start; docs/s is measured
from the first to the last verdict (steady state, start-up excluded). Latency: documents are then
published at a fixed rate (half the measured peak) and each verdict's ``processed_at`` minus its
input record timestamp is taken. Results: bench-results/e2e.json and e2e.png.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from stream.service.broker import EmbeddedBroker
from stream.service.verdicts import percentile

PASS_THROUGH = '''
import sys, json, faust
broker, datadir, src_name, dst_name, tuned = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "1"
extra = dict(producer_linger_ms=5, broker_commit_every=1000, stream_buffer_maxsize=8192) if tuned else {}
app = faust.App("pt-" + dst_name, broker=broker, datadir=datadir, web_enabled=False, broker_rebalance_timeout=2,
                broker_session_timeout=10, broker_heartbeat_interval=1, consumer_auto_offset_reset="earliest", **extra)
raw = dict(key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw")
src = app.topic(src_name, **raw)
dst = app.topic(dst_name, **raw)

@app.agent(src)
async def passthrough(stream):
    async for key, value in stream.items():
        await dst.send(key=key, value=json.dumps(json.loads(value)).encode())

faust.Worker(app, loglevel="error", quiet=True).execute_from_commandline()
'''


def _docs(n: int) -> list[bytes]:
    from importlib import resources

    base = [json.loads(line) for line in resources.files("stream").joinpath("data/demo/tang_demo.jsonl")
            .read_text(encoding="utf-8").splitlines() if line.strip()]
    out = []
    for i in range(n):
        d = dict(base[i % len(base)])
        d["id"] = f"{d['id']}#{i // len(base)}"  # copies of the sample: exact duplicates, all verified
        d["ts"] = float(i)
        out.append(json.dumps(d, ensure_ascii=False).encode())
    return out


def _publish(bootstrap: str, topic: str, values: list[bytes], rate: float | None = None) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5 if rate is None else 0,
                  "enable.idempotence": True})
    t0 = time.perf_counter()
    for i, v in enumerate(values):
        if rate:
            delay = t0 + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        p.produce(topic, key=json.loads(v)["id"].encode(), value=v)
        p.poll(0)
    p.flush(60)


def _collect(bootstrap: str, topic: str, n: int, timeout: float) -> list[tuple[float, dict[str, Any] | None, int]]:
    """(arrival time, parsed value or None, broker timestamp ms) of ``n`` records (group-less read)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
    meta = None
    deadline = time.time() + timeout
    while meta is None and time.time() < deadline:
        meta = c.list_topics(topic, timeout=5).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            meta = None
            time.sleep(0.5)
    assert meta is not None, f"topic {topic} never appeared"
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in meta.partitions])
    out: list[tuple[float, dict[str, Any] | None, int]] = []
    seen: set[bytes] = set()
    while len(seen) < n and time.time() < deadline:
        for m in c.consume(1000, 0.5):
            key, raw = m.key(), m.value()
            if m.error() or raw is None or key is None:
                continue
            seen.add(key)
            value = json.loads(raw) if topic.startswith("verdicts") else None
            out.append((time.time(), value, m.timestamp()[1]))
    c.close()
    return out


def _create(bootstrap: str, topics: list[str], partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, partitions, 1) for t in topics]).values():
        f.result()


def _rate(records: list[tuple[float, Any, int]]) -> float:
    if len(records) < 2:
        return 0.0
    return (len(records) - 1) / max(1e-9, records[-1][0] - records[0][0])


def run_pass_through(broker: EmbeddedBroker, tmp: Path, values: list[bytes], tuned: bool) -> float:
    name = "pt-tuned" if tuned else "pt-default"
    _create(broker.bootstrap, [f"{name}-in", f"{name}-out"], 8)
    _publish(broker.bootstrap, f"{name}-in", values)
    script = tmp / "pass_through.py"
    script.write_text(PASS_THROUGH)
    proc = subprocess.Popen([sys.executable, str(script), broker.url, str(tmp / name), f"{name}-in", f"{name}-out",
                             "1" if tuned else "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        got = _collect(broker.bootstrap, f"{name}-out", len(values), timeout=300)
    finally:
        proc.terminate()
        proc.wait(20)
    return _rate(got)


def run_pipeline(broker: EmbeddedBroker, tmp: Path, values: list[bytes], workers: int, partitions: int,
                 rate: float | None, tag: str) -> dict[str, Any]:
    app = f"bench-{tag}"
    env = {**os.environ, "DEDUP_BROKER": broker.url, "DEDUP_APP_ID": app, "DEDUP_PARTITIONS": str(partitions),
           "DEDUP_REBALANCE_TIMEOUT": "2", "DEDUP_DOCUMENTS_TOPIC": f"documents-{tag}",
           "DEDUP_VERDICTS_TOPIC": f"verdicts-{tag}", "DEDUP_DLQ_TOPIC": f"dlq-{tag}"}
    from stream.service.settings import load_settings
    from stream.service.worker import apply_topology

    apply_topology(load_settings(env=env), lambda _m: None)
    if rate is None:
        _publish(broker.bootstrap, f"documents-{tag}", values)
    procs = [subprocess.Popen([sys.executable, "-m", "stream.service.worker", "--data-dir", str(tmp / f"{tag}-{i}")],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i in range(workers)]
    try:
        if rate is not None:
            # wait until the pipeline answers, then publish at a fixed rate
            _publish(broker.bootstrap, f"documents-{tag}", values[:1])
            _collect(broker.bootstrap, f"verdicts-{tag}", 1, timeout=120)
            _publish(broker.bootstrap, f"documents-{tag}", values[1:], rate=rate)
        got = _collect(broker.bootstrap, f"verdicts-{tag}", len(values), timeout=600)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(20)
    firsts = [v for _, v, _ in got if v is not None and not v.get("revised")]
    lat = sorted(float(v["processed_at"]) - float(v["source"]["timestamp"]) for v in firsts)
    if rate is not None:
        lat = lat[1:]  # the warm-up document
    return {
        "workers": workers, "partitions": partitions, "documents": len(values), "verdicts": len(got),
        "docs_per_s": round(_rate(got), 1) if rate is None else None, "offered_rate": rate,
        "latency_ms": {f"p{q}": round(percentile(lat, q) * 1000, 1) for q in (50, 90, 99)},
    }


@click.command()
@click.option("--documents", "-n", type=int, default=4000, show_default=True)
@click.option("--partitions", type=int, default=4, show_default=True)
@click.option("--out", type=click.Path(file_okay=False), default="bench-results", show_default=True)
def command(documents: int, partitions: int, out: str) -> None:
    """End-to-end throughput and latency vs a pass-through agent (embedded broker)."""
    values = _docs(documents)
    tmp = Path(tempfile.mkdtemp(prefix="dedup-bench-"))
    results: dict[str, Any] = {"documents": documents, "partitions": partitions, "cpus": os.cpu_count()}
    with EmbeddedBroker(log_path=tmp / "tansu.log") as broker:
        results["pass_through_default"] = round(run_pass_through(broker, tmp, values, tuned=False), 1)
        click.echo(f"pass-through agent (Faust defaults): {results['pass_through_default']} msgs/s")
        results["pass_through_tuned"] = round(run_pass_through(broker, tmp, values, tuned=True), 1)
        click.echo(f"pass-through agent (tuned batching): {results['pass_through_tuned']} msgs/s")
        runs = []
        for workers in (1, 2):
            r = run_pipeline(broker, tmp, values, workers, partitions, None, f"w{workers}")
            click.echo(f"pipeline, {workers} worker(s): {r['docs_per_s']} docs/s (backlog), latency {r['latency_ms']}")
            runs.append(r)
        peak = max(r["docs_per_s"] or 0 for r in runs)
        half = max(1.0, (runs[0]["docs_per_s"] or 0) / 2)  # half of the 1-worker peak, run on 1 worker
        lat_run = run_pipeline(broker, tmp, values[: min(len(values), int(half * 20))], 1, partitions, half, "lat")
        click.echo(f"latency at half of peak ({half:.0f} docs/s offered, 1 worker): {lat_run['latency_ms']}")
        results["throughput"] = runs
        results["latency_at_half_peak"] = lat_run
        results["ratio_vs_pass_through_default"] = round(peak / max(1e-9, results["pass_through_default"]), 2)
        results["ratio_vs_pass_through_tuned"] = round(peak / max(1e-9, results["pass_through_tuned"]), 2)
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "e2e.json").write_text(json.dumps(results, indent=1))
    _plot(results, out_dir / "e2e.png")
    click.echo(json.dumps({k: results[k] for k in ("ratio_vs_pass_through_default", "ratio_vs_pass_through_tuned")}))
    click.echo(f"wrote {out_dir / 'e2e.json'} and {out_dir / 'e2e.png'}")


def _plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    labels = ["pass-through\n(default)", "pass-through\n(tuned)"] + [
        f"dedup\n{r['workers']} worker(s)" for r in results["throughput"]]
    values = [results["pass_through_default"], results["pass_through_tuned"]] + [
        r["docs_per_s"] for r in results["throughput"]]
    ax1.bar(labels, values, color=["#999", "#bbb", "#1f77b4", "#2ca02c"])
    ax1.set_ylabel("messages or documents / s")
    ax1.set_title("Throughput on tansu (same run)")
    lat = results["latency_at_half_peak"]["latency_ms"]
    ax2.bar(list(lat), list(lat.values()), color="#ff7f0e")
    ax2.axhline(250, color="red", linestyle="--", label="target p99 250 ms")
    ax2.set_ylabel("ms")
    ax2.set_title(f"Verdict latency at {results['latency_at_half_peak']['offered_rate']:.0f} docs/s")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
