"""``python -m benchmarks repartition``: the time of ``dedup repartition`` from 2 to 8 index partitions.

A deployment's changelogs on the embedded tansu broker, written without workers (a worker judges ~1,000
documents/s here, so a 1M-document deployment would take hours to build): each document's record with a
random 64-bit fingerprint, 24 random band values and a ~600-byte payload (a serialized fingerprint
whose exact sketch holds 128 random shingle hashes, so ~8 anchors route it as a text's would; one of
4,096 such payloads), its place and version keys, and a finished gather state; built by the same
re-keying as the command (from one partition to the old count). Then ``dedup repartition`` runs in a
process of its own, as an operator runs it: it reads them back, rebuilds the index for the new count and
writes the new changelogs; the figures are that process's wall and CPU time and peak RSS. Random
fingerprints have no near copies: the index's buckets stay small, as on a corpus with few duplicates.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import tempfile
import time
from typing import Any

import click
import numpy as np

from benchmarks.common import DEFAULT_OUT, pyplot, save_json, stamp
from stream.fingerprint import Fingerprint, without_bands
from stream.fingerprint.sketch import SketchSpec, make_sketch
from stream.index import StoredDocument
from stream.service.settings import load_settings
from stream.service.stages.gather_state import GatherState
from stream.service.stages.messages import Source, dumps
from stream.service.stages.probe import VERSION_KEY, source_key

BANDS = 24  # FingerprintConfig().band_tables: 28 table keys per document with the k + 1 = 4 SimHash tables


def synthetic_state(n: int, seed: int = 7) -> tuple[Any, list[list[tuple[bytes, bytes]]]]:
    """The old deployment's documents (as a ``BlockState``) and its gather states (one partition)."""
    from stream.service.runtime.ledger import KEY_PREFIX
    from stream.service.stages.rekey import BlockState

    rng = random.Random(seed)
    state = BlockState(skip_prefix=KEY_PREFIX, config=dumps({"version": 8, "k": 3, "bits": 64, "bands": BANDS}),
                       settings=b'{"synthetic": true}')
    payloads = _payloads(rng)
    gather = []
    for i in range(n):
        doc, ts, fp = f"doc-{i:08d}", 1.7e9 + i, rng.getrandbits(64)
        bands = tuple((rng.getrandbits(64), 0) for _ in range(BANDS))
        state.add_document(StoredDocument(fp, ts, frozenset(range(4 + BANDS)), bands, doc,
                                          payloads[i % len(payloads)]))
        source = Source("documents", i % 8, i // 8, ts)
        state.sources[source_key((ts, doc))] = source.round_id.encode()
        version = [ts, ts, source.partition, source.offset]
        state.versions[VERSION_KEY + doc.encode()] = dumps(version)
        gs = GatherState(doc=doc, simhash=fp, order=(ts, doc), source=source, round=source.round_id,
                         version=(ts, ts, source.partition, source.offset), expected=1, got=[0], published=True)
        gather.append((doc.encode(), dumps(gs.to_json())))
    return state, [gather]


def _payloads(rng: random.Random, count: int = 4096, shingles: int = 128) -> list[bytes]:
    """Serialized fingerprints (without bands, as the index stores them) of random shingle sets."""
    spec = SketchSpec()
    out = []
    for i in range(count):
        hashes = np.unique(np.array([rng.getrandbits(64) for _ in range(shingles)], dtype=np.uint64))
        fp = Fingerprint(f"payload-{i}", rng.getrandbits(64), rng.randbytes(16), make_sketch(hashes, spec), [],
                         "bench-repartition", spec)
        out.append(without_bands(fp.to_bytes()))
    return out


def build_old(settings: Any, n: int) -> float:
    """The old deployment's topics and changelogs; returns the seconds it took."""
    from stream.service.changelog_copy import BLOCKS, GATHER, _Writer
    from stream.service.runtime.worker_process import apply_topology
    from stream.service.stages.rekey import Placement, block_partitions, gather_partitions, routed

    t0 = time.perf_counter()
    state, gather_items = synthetic_state(n)
    apply_topology(settings, lambda _m: None)
    topology = settings.topology()
    documents = routed(state, settings.index_partitions)
    gather = gather_partitions([dict(p) for p in gather_items], settings.index_partitions, b"\xff\xfe",
                               Placement.of(state, documents).partitions)
    with _Writer(settings) as writer:
        for partition, records in block_partitions(state, documents):
            writer.write(topology.internal_name(BLOCKS), partition, records)
        for partition, states in enumerate(gather.partitions):
            writer.write(topology.internal_name(GATHER), partition, states)
    return time.perf_counter() - t0


def run_command(env: dict[str, str], old_app_id: str, new_app_id: str, new_count: int) -> dict[str, Any]:
    """``dedup repartition`` as an operator runs it, in a process of its own: its wall and CPU seconds,
    peak RSS (its own VmHWM, polled: the rusage of a child counts the image it was forked from), the
    phases and records its report line gives."""
    args = [sys.executable, "-m", "stream", "repartition", "--from-app-id", old_app_id, "--app-id", new_app_id,
            "--index-partitions", str(new_count)]
    # its output to files, not pipes: nothing reads a pipe while the loop below waits for it to end
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(args, env={**os.environ, **env}, stdout=out, stderr=err)
        peak = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, _high_water_mb(proc.pid))
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise click.ClickException(f"dedup repartition failed: {stderr[-2000:]}")
    phases = {name: float(value) for name, value in re.findall(r"(\w+) ([\d.]+) s\b", stdout.rsplit(";", 1)[-1])}
    written = {topic: int(count) for count, topic in re.findall(r"(\d+) to (\S+?)[,;]", stdout)}
    return {"repartition_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_mb": peak, "phases_s": phases, "records_written": written}


def _high_water_mb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            return int(status.read().split("VmHWM:")[1].split()[0]) // 1024
    except (OSError, IndexError):  # exited meanwhile
        return 0


@click.command()
@click.option("--sizes", default="20000,100000", help="Documents per deployment, comma-separated.")
@click.option("--old", "old_count", default=2, help="Index partitions of the old deployment.")
@click.option("--new", "new_count", default=8, help="Index partitions of the new one.")
@click.option("--out", default=DEFAULT_OUT, help="Directory for repartition.json and .png.")
def command(sizes: str, old_count: int, new_count: int, out: str) -> None:
    """Time `dedup repartition` (index partitions OLD -> NEW) on deployments of each size."""
    from stream.service.runtime.embedded import EmbeddedBroker

    rows: list[dict[str, Any]] = []
    broker = EmbeddedBroker().start()
    try:
        for n in [int(s) for s in sizes.split(",") if s]:
            tag = f"bench{n}"
            env = {"DEDUP_BROKER": broker.url, "DEDUP_PARTITIONS": "8", "DEDUP_DOCUMENTS_TOPIC": f"{tag}.documents",
                   "DEDUP_VERDICTS_TOPIC": f"{tag}.verdicts", "DEDUP_DLQ_TOPIC": f"{tag}.dlq"}
            old = load_settings(env=env).with_overrides(app_id=f"{tag}-old", index_partitions=old_count)
            built = build_old(old, n)
            run = run_command(env, old.app_id, f"{tag}-new", new_count)
            wall = run["repartition_s"]
            row = {"documents": n, "old_index_partitions": old_count, "new_index_partitions": new_count,
                   "build_old_s": round(built, 1), **run, "us_per_document": round(wall / n * 1e6),
                   "extrapolated_1m_min": round(wall / n * 1e6 / 60, 1)}
            rows.append(row)
            click.echo(f"{n:>9,} documents {old_count} -> {new_count}: {wall:7.1f} s ({row['us_per_document']} us/doc, "
                       f"cpu {row['cpu_s']} s; {row['phases_s']}); 1M at this rate: {row['extrapolated_1m_min']} min; "
                       f"peak RSS {row['peak_rss_mb']} MB")
    finally:
        broker.stop()
    path = save_json(out, "repartition", {"command": f"repartition --sizes {sizes} --old {old_count} --new {new_count}",
                                          "rows": rows})
    plt = pyplot()
    fig, (ax, mem) = plt.subplots(1, 2, figsize=(11, 4))
    documents = [r["documents"] for r in rows]
    ax.plot(documents, [r["repartition_s"] for r in rows], "o-", label="wall")
    ax.plot(documents, [r["cpu_s"] for r in rows], "s:", label="CPU")
    ax.axhline(600, color="red", linestyle="--", label="target: 1M in 10 min")
    ax.set_ylabel(f"seconds, {old_count} -> {new_count} index partitions")
    mem.plot(documents, [r["peak_rss_mb"] for r in rows], "o-")
    mem.set_ylabel("the command's peak RSS, MB")
    for a in (ax, mem):
        a.set_xscale("log")
        a.set_xlabel("documents in the deployment")
    ax.legend()
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    stamp(fig)
    fig.savefig(path.with_suffix(".png"), dpi=110)
    click.echo(f"saved {path} and .png")
