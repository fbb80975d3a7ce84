"""``python -m benchmarks table-store``: one block-table partition as the worker opens it, grown by the
scale benchmark's stream.

The store is a Faust table partition (Faust's RocksDB store, the worker's table options and memory
budget, ``FaustTableStore``) under the index as the probe stage builds it (a ``BufferedStore``
drained after every batch, ``sole_writer``, ``root_filter``, band runs on disk). Nothing is sent to
Kafka: the changelog records are counted, not produced, so the figures are the index's and RocksDB's
part of a worker's CPU. Variants: ``worker`` (``table_options`` as the worker uses them) and
``faust`` (the same without ``TABLE_LEVEL0_FILES``: RocksDB's level-0 trigger of 4), each run in a
process of its own, alternated over ``--rounds``. Per step: process CPU and RocksDB's background
threads' CPU per document, RSS, disk; per run: RocksDB's compaction statistics. Results:
``--out``/table-store.json and .png.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from benchmarks.common import commit, pyplot, save_figure, save_json
from benchmarks.scale import BANDS, K, StreamMaker, _disk_bytes, _rocksdb_cpu_s, _rss_mib

VARIANTS = ("faust", "worker")
CHECKPOINT_BATCHES = 20  # the probe stage writes the index's statistics every few seconds, not per batch


class CountedChangelog:
    """The ``Output`` part ``FaustTableStore`` writes its changelog to: counted here, not produced."""

    def __init__(self) -> None:
        self.records = 0

    def changelog(self, topic: str, partition: int, key: bytes, value: bytes | None) -> None:
        self.records += 1

    def changelog_many(self, topic: str, partition: int, ops: list[Any]) -> None:
        self.records += len(ops)


def _grow(variant: str, size: int, step: int, root: Path) -> dict[str, Any]:
    import faust

    from stream.index import DERIVED_NAMESPACES, BlockIndex
    from stream.service.runtime.app import BLOCKS_TABLE, table_options
    from stream.service.runtime.patches import LEVEL0_OPTION, install_patches
    from stream.service.runtime.rocks_memory import RocksMemory
    from stream.service.runtime.tablestore import FaustTableStore
    from stream.service.stages.probe import IndexMemory
    from stream.storage import BufferedStore

    install_patches(500, {}, lambda lost: None)
    options = table_options(BLOCKS_TABLE, RocksMemory())
    if variant == "faust":
        options.pop(LEVEL0_OPTION, None)
    app = faust.App("table-store-bench", store="rocksdb://", tabledir=str(root / "tables"))
    table = app.Table(BLOCKS_TABLE, partitions=1, key_type=bytes, value_type=bytes, options=options)
    changelog = CountedChangelog()
    store = FaustTableStore(table, 0, changelog, DERIVED_NAMESPACES)  # type: ignore[arg-type]
    buffered = BufferedStore(store, max_ops=1 << 30)
    memory = IndexMemory()
    index = BlockIndex(None, k=K, bands=BANDS, store=buffered, sole_writer=True, root_filter=True,
                       cache_bytes=memory.bucket_cache_bytes, band_memtable=memory.band_memtable,
                       band_dir=root / "bands")
    maker = StreamMaker(512, 0.02, 600, 1)
    steps: list[dict[str, float]] = []
    done = batches = 0
    while done < size:
        cpu, background, in_step = time.process_time(), _rocksdb_cpu_s(), 0
        while in_step < step and done < size:
            fps, ids, bands, payloads = maker.make()
            index.query_insert_many(fps, ids, ts=[float(done + i) for i in range(len(fps))], bands=bands,
                                    payloads=payloads)
            buffered.drain()
            batches += 1
            if batches % CHECKPOINT_BATCHES == 0:
                index.flush()
            in_step += len(fps)
            done += len(fps)
        steps.append({"documents": done, "cpu_us_per_doc": 1e6 * (time.process_time() - cpu) / in_step,
                      "rocksdb_cpu_us_per_doc": 1e6 * (_rocksdb_cpu_s() - background) / in_step,
                      "rss_mib": _rss_mib(), "disk_bytes_per_doc": _disk_bytes(root / "tables") / done})
        click.echo(f"{variant} " + " ".join(f"{k}={v:.1f}" for k, v in steps[-1].items()), err=True)
    return {"variant": variant, "steps": steps, "changelog_records": changelog.records,
            "compaction": _compaction(store.db.property_value("rocksdb.stats") or "")}


def _compaction(stats: str) -> dict[str, float]:
    """From RocksDB's compaction statistics: the "Sum" row (every compaction and flush: GB written, write
    amplification, CPU of the merges) and the "High" row (the flushes alone)."""
    lines = stats.splitlines()
    header = next((line.split() for line in lines if line.startswith("Level")), None)
    totals: dict[str, float] = {}
    if header is None:
        return totals
    for fields in (line.split() for line in lines):
        if fields[:1] not in (["Sum"], ["High"]):
            continue
        # a row's size is two fields ("874.18 MB") where the header has one ("Size"): columns after it shift by 1
        column = {name: fields[i + 1] for i, name in enumerate(header) if i >= 3 and i + 1 < len(fields)}
        what = "total" if fields[0] == "Sum" else "flush"
        totals[f"{what}_write_gb"] = float(column["Write(GB)"])
        totals[f"{what}_merge_cpu_s"] = float(column["CompMergeCPU(sec)"])
        if what == "total":
            totals["write_amp"] = float(column["W-Amp"])
    return totals


def plot(runs: list[dict[str, Any]], out: Path) -> None:
    plt = pyplot()
    fig, (cost, background) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = {"faust": "tab:red", "worker": "tab:blue"}
    for run in runs:
        millions = [s["documents"] / 1e6 for s in run["steps"]]
        label = f"{run['variant']} (round {run['round']})"
        cost.plot(millions, [s["cpu_us_per_doc"] for s in run["steps"]], marker="o", color=colors[run["variant"]],
                  alpha=0.5 + 0.25 * (run["round"] % 2), label=label)
        background.plot(millions, [s["rocksdb_cpu_us_per_doc"] for s in run["steps"]], marker="x",
                        color=colors[run["variant"]], alpha=0.5 + 0.25 * (run["round"] % 2), label=label)
    cost.set_title("process CPU, us per document over the step")
    background.set_title("RocksDB's background threads, us per document")
    for ax in (cost, background):
        ax.set_xlabel("documents in the partition (millions)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    fig.suptitle("one block-table partition as the worker opens it (Faust's RocksDB store)")
    save_figure(fig, out)


@click.command("table-store")
@click.option("--size", default=1_000_000, show_default=True, help="Documents per run.")
@click.option("--step", default=250_000, show_default=True, help="Documents per reported step.")
@click.option("--rounds", default=2, show_default=True, help="Runs of each variant, alternated (A B, B A, ...).")
@click.option("--variants", default=",".join(VARIANTS), show_default=True, help="Comma-separated: faust, worker.")
@click.option("--dir", "work_dir", type=click.Path(path_type=Path), default=None,
              help="Where the partitions are built (default: a temporary directory).")
@click.option("--out", default="bench-results/table-store", show_default=True, type=click.Path(path_type=Path),
              help="Where table-store.json and .png go.")
@click.option("--one", type=click.Choice(VARIANTS), default=None, hidden=True)
def command(size: int, step: int, rounds: int, variants: str, work_dir: Path | None, out: Path,
            one: str | None) -> None:
    """A worker's block-table partition grown to --size documents: CPU per document, RocksDB's share."""
    if one is not None:  # a child: one run, its result as JSON on stdout
        with tempfile.TemporaryDirectory(prefix="dedup-table-store-", dir=work_dir) as root:
            click.echo(json.dumps(_grow(one, size, step, Path(root))))
        return
    order = [v.strip() for v in variants.split(",") if v.strip()]
    runs: list[dict[str, Any]] = []
    for round_ in range(1, rounds + 1):
        for variant in order if round_ % 2 else order[::-1]:
            args = [sys.executable, "-m", "benchmarks", "table-store", "--one", variant, "--size", str(size),
                    "--step", str(step)] + (["--dir", str(work_dir)] if work_dir else [])
            child = subprocess.run(args, check=True, capture_output=True, text=True)
            sys.stderr.write(child.stderr)
            runs.append({**json.loads(child.stdout.strip().splitlines()[-1]), "round": round_})
    means = {v: {key: sum(sum(s[key] for s in r["steps"]) / len(r["steps"]) for r in runs if r["variant"] == v)
                 / sum(r["variant"] == v for r in runs) for key in ("cpu_us_per_doc", "rocksdb_cpu_us_per_doc")}
             for v in order}
    for variant, mean in means.items():
        click.echo(f"{variant}: process CPU {mean['cpu_us_per_doc']:.1f} us/doc, RocksDB background "
                   f"{mean['rocksdb_cpu_us_per_doc']:.1f} us/doc (mean over runs and steps)")
    params = {"size": size, "step": step, "rounds": rounds, "variants": order, "code_commit": commit()}
    target = save_json(str(out), "table-store", {"params": params, "means": means, "runs": runs})
    plot(runs, out / "table-store.png")
    click.echo(f"saved {target} and {out / 'table-store.png'}")
