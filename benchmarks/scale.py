"""``python -m benchmarks scale``: one index partition grown to tens of millions of documents.

The stream a probe partition sees, without the detector: ``BlockIndex(path, k=3, bands=24)`` filled
by ``query_insert_many`` in batches of ``--batch``, each document with its 24 (band value, extension)
pairs and a ``--payload``-byte payload (the product stores its sketch there), uniform random
fingerprints and band values, ``--near`` of each batch near copies of the previous batch (the
fingerprint 1-3 bits away, 20 of the 24 band values shared). Per step of ``--step`` documents:
query + insert per document (wall and process CPU), RocksDB's background threads' CPU per document,
resident memory (now and peak), disk bytes per document and candidates per query. At the end the
index is closed and reopened, and the reopen plus its first query is timed. Results:
``--out``/scale.json and scale.png (cost and memory against N).
"""

from __future__ import annotations

import os
import resource
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import click
import numpy as np

from benchmarks.common import commit, pyplot, save_figure, save_json
from stream.index import BlockIndex

K, BANDS = 3, 24


@dataclass
class Step:
    documents: int  # in the index at the end of this step
    us_per_doc: float  # query + insert over the step, wall clock
    cpu_us_per_doc: float  # process CPU (all threads) over the step
    rss_mib: float  # resident at the end of the step
    peak_rss_mib: float  # the process's peak so far
    disk_bytes_per_doc: float  # the index directory now, per document
    simhash_candidates: float  # mean candidates per query over the whole build (SimHash tables)
    band_candidates: float  # the same for the band tables
    simhash_candidates_step: float  # mean SimHash candidates per query over this step
    rocksdb_cpu_us_per_doc: float  # RocksDB's background threads (flushes, compactions) over the step


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _rocksdb_cpu_s() -> float:
    """CPU seconds of this process's RocksDB background threads (named ``rocksdb:*``): part of the
    process CPU, and invisible to a Python profiler."""
    total = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            if not (task / "comm").read_text().startswith("rocksdb"):
                continue
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


class StreamMaker:
    """Batches of (fingerprints, ids, bands, payloads), each with ``near`` copies of the batch before."""

    def __init__(self, batch: int, near: float, payload: int, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.batch, self.near, self.payload = batch, near, payload
        self.next_id = 0
        self.last: tuple[np.ndarray, np.ndarray] | None = None

    def make(self) -> tuple[list[int], list[str], np.ndarray, list[bytes]]:
        n, rng = self.batch, self.rng
        fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
        bands = rng.integers(0, 2**64, size=(n, BANDS, 2), dtype=np.uint64)
        copies = round(n * self.near) if self.last is not None else 0
        if copies:
            last_fps, last_bands = self.last  # type: ignore[misc]
            src = rng.choice(len(last_fps), size=copies, replace=False)
            flips = np.zeros(copies, dtype=np.uint64)
            for _ in range(3):  # 1-3 distinct-or-repeated bits: distance <= 3
                flips ^= np.uint64(1) << rng.integers(0, 64, size=copies).astype(np.uint64)
            fps[:copies] = last_fps[src] ^ flips
            bands[:copies, : BANDS - 4] = last_bands[src, : BANDS - 4]
        self.last = (fps, bands)
        ids = [f"d{i}" for i in range(self.next_id, self.next_id + n)]
        self.next_id += n
        payload = rng.bytes(self.payload * n)
        payloads = [payload[i * self.payload : (i + 1) * self.payload] for i in range(n)]
        return fps.tolist(), ids, bands, payloads


def grow(path: Path, size: int, step: int, batch: int, near: float, payload: int, seed: int,
         on_step: Callable[[list[Step]], None] | None = None) -> tuple[list[Step], float, float]:
    """Fill one index to ``size`` documents; the steps, then the reopen + first query in seconds.
    ``on_step`` gets the steps so far after each one."""
    maker = StreamMaker(batch, near, payload, seed)
    steps: list[Step] = []
    index = BlockIndex(str(path), k=K, bands=BANDS)
    done = 0
    probe = None
    compared = 0.0  # SimHash candidates compared so far (a query per document)
    while done < size:
        wall = cpu = 0.0
        in_step = 0
        background = _rocksdb_cpu_s()
        while in_step < step and done < size:
            fps, ids, bands, payloads = maker.make()
            probe = (fps[-1], bands[-1])
            t0, c0 = time.perf_counter(), time.process_time()
            index.query_insert_many(fps, ids, ts=[float(done + i) for i in range(len(fps))], bands=bands,
                                    payloads=payloads)
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
            in_step += len(fps)
            done += len(fps)
        stats = index.stats()
        simhash = stats.kinds["simhash"].candidates_mean
        steps.append(Step(done, 1e6 * wall / in_step, 1e6 * cpu / in_step, _rss_mib(), _peak_rss_mib(),
                          _disk_bytes(path) / done, simhash, stats.kinds["band"].candidates_mean,
                          (simhash * done - compared) / in_step, 1e6 * (_rocksdb_cpu_s() - background) / in_step))
        compared = simhash * done
        click.echo(" ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in
                            asdict(steps[-1]).items()), err=True)
        if on_step is not None:
            on_step(steps)
    index.close()
    del index
    t0 = time.perf_counter()
    reopened = BlockIndex(str(path), k=K, bands=BANDS)
    assert probe is not None
    pairs = [(int(value), int(ext)) for value, ext in probe[1]]
    hits = reopened.query(probe[0], bands=pairs)
    reopen_s = time.perf_counter() - t0
    if not hits:
        raise click.ClickException("the reopened index did not find the last document it stored")
    reopened.close()
    return steps, reopen_s, _rss_mib()


def plot(steps: list[Step], out: Path) -> None:
    plt = pyplot()
    fig, (cost, memory) = plt.subplots(1, 2, figsize=(11, 4.2))
    millions = [s.documents / 1e6 for s in steps]
    cost.plot(millions, [s.us_per_doc for s in steps], marker="o", label="query+insert, wall")
    cost.plot(millions, [s.cpu_us_per_doc for s in steps], marker=".", label="process CPU")
    cost.plot(millions, [s.rocksdb_cpu_us_per_doc for s in steps], marker="x", label="RocksDB background threads")
    cost.set_xlabel("documents in the partition (millions)")
    cost.set_ylabel("us per document over the step")
    cost.set_ylim(bottom=0)
    cost.legend()
    memory.plot(millions, [s.rss_mib for s in steps], marker="o", label="RSS (MiB)")
    memory.plot(millions, [s.disk_bytes_per_doc for s in steps], marker=".", label="disk bytes per document")
    memory.set_xlabel("documents in the partition (millions)")
    memory.set_ylim(bottom=0)
    memory.legend()
    fig.suptitle(f"one index partition, k={K}, {BANDS} band tables, uniform + near copies")
    save_figure(fig, out)


@click.command("scale")
@click.option("--size", default=10_000_000, show_default=True, help="Documents to grow the partition to.")
@click.option("--step", default=1_000_000, show_default=True, help="Documents per reported step.")
@click.option("--batch", default=512, show_default=True, help="Documents per query_insert_many call.")
@click.option("--near", default=0.02, show_default=True, help="Share of each batch copied from the batch before.")
@click.option("--payload", default=600, show_default=True, help="Payload bytes per document.")
@click.option("--seed", default=1, show_default=True, help="Seed of the random stream.")
@click.option("--dir", "work_dir", type=click.Path(path_type=Path), default=None,
              help="Where the index is built (default: a temporary directory, removed at the end).")
@click.option("--out", default="bench-results/scale", show_default=True, type=click.Path(path_type=Path),
              help="Where scale.json and scale.png go.")
def command(size: int, step: int, batch: int, near: float, payload: int, seed: int, work_dir: Path | None,
            out: Path) -> None:
    """Grow one index partition to --size documents: cost, memory, disk and reopen time against N."""
    params = {"size": size, "step": step, "batch": batch, "near": near, "payload": payload, "seed": seed,
              "k": K, "bands": BANDS, "code_commit": commit()}  # the code that runs: the checkout may move on

    def save(steps: list[Step], summary: Mapping[str, object]) -> Path:
        target = save_json(str(out), "scale", {"params": params, "summary": summary,
                                               "steps": [asdict(s) for s in steps]})
        plot(steps, out / "scale.png")
        return target

    def save_so_far(steps: list[Step]) -> None:  # a run stopped before the end keeps the millions it reached
        save(steps, {"complete": False, **_cost_and_memory(steps)})

    root = Path(tempfile.mkdtemp(prefix="dedup-scale-", dir=work_dir))
    try:
        steps, reopen_s, reopen_rss = grow(root / "index", size, step, batch, near, payload, seed, save_so_far)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    summary = {"complete": True, **_cost_and_memory(steps), "reopen_first_query_s": reopen_s,
               "rss_after_reopen_mib": reopen_rss}
    click.echo(f"first step {steps[0].us_per_doc:.1f} us/doc, last {steps[-1].us_per_doc:.1f} "
               f"({summary['last_over_first']:.2f}x); peak RSS {summary['peak_rss_mib']:.0f} MiB; "
               f"reopen + first query {reopen_s:.2f} s; disk {summary['disk_bytes_per_doc']:.0f} B/doc")
    target = save(steps, summary)
    click.echo(f"saved {target} and {out / 'scale.png'}")


def _cost_and_memory(steps: list[Step]) -> dict[str, float]:
    first, last = steps[0], steps[-1]
    return {"last_over_first": last.us_per_doc / first.us_per_doc,
            "cpu_last_over_first": last.cpu_us_per_doc / first.cpu_us_per_doc,
            "peak_rss_mib": max(s.peak_rss_mib for s in steps), "disk_bytes_per_doc": last.disk_bytes_per_doc}
