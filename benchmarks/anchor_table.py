"""``python -m benchmarks anchor-table``: the anchor table's memory per (document, anchor) and CPU per
document as it grows, on synthetic documents (stream/index/anchors.py).

Documents as `dedup scan` sends them: added in batches, each batch then queried with its own handles
(a document sees the ones before it). Anchors: 22-126 per document (the benchmark tracks' range),
uniform below 2^28; a tenth of the documents repost an earlier one (its anchors, a fifth replaced), and
each takes 0-8 of 300 template anchors (hot ones). ``--table module:Class`` measures another
implementation with the same ``add``/``proposed`` methods (an older one, for an A/B); one process
measures one table, with tracemalloc (``--trace``: bytes) or without it (CPU).
"""

from __future__ import annotations

import importlib
import json
import resource
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import numpy as np

from benchmarks.common import pyplot, save_json, stamp

BOUND = 1 << 28
BATCH = 1000


def anchors_of(payload: bytes) -> tuple[np.ndarray, int]:
    return np.frombuffer(payload, dtype="<u4"), BOUND


def synthetic(count: int, seed: int) -> Iterator[bytes]:
    """Payloads (little-endian uint32 anchors, sorted) of ``count`` documents (module doc)."""
    rng = np.random.default_rng(seed)
    template = rng.integers(0, BOUND, 300, dtype=np.uint32)
    kept: list[np.ndarray] = []
    for i in range(count):
        if kept and rng.random() < 0.1:
            anchors = kept[int(rng.integers(len(kept)))].copy()
            swap = rng.random(len(anchors)) < 0.2
            anchors[swap] = rng.integers(0, BOUND, int(swap.sum()), dtype=np.uint32)
        else:
            anchors = rng.integers(0, BOUND, int(rng.integers(22, 127)), dtype=np.uint32)
        anchors = np.unique(np.concatenate([anchors, template[rng.integers(0, 300, int(rng.integers(0, 9)))]]))
        if i % 16 == 0 and len(kept) < 4096:
            kept.append(anchors)
        yield anchors.astype("<u4").tobytes()


def measure(table: Any, payloads: Iterator[bytes], checkpoints: list[int], trace: bool) -> list[dict[str, Any]]:
    """Add and query batch after batch; at each checkpoint the table's bytes (traced) or CPU so far."""
    rows, done, entries, cpu = [], 0, 0, 0.0
    many = getattr(table, "proposed_many", None)
    for target in checkpoints:
        while done < target:
            batch = [next(payloads) for _ in range(min(BATCH, target - done))]
            started = time.process_time()
            for handle, payload in enumerate(batch, done):
                table.add(handle, payload)
            queries = [(*anchors_of(p), h) for h, p in enumerate(batch, done)]
            found = many(queries) if many else [table.proposed(*q) for q in queries]
            cpu += time.process_time() - started
            entries += sum(len(p) // 4 for p in batch)
            done += len(batch)
            assert len(found) == len(batch)
        row: dict[str, Any] = {"documents": done, "entries": entries, "cpu_us_per_document": 1e6 * cpu / done,
                               "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
        if trace:
            current, peak = tracemalloc.get_traced_memory()
            row |= {"traced_bytes": current, "traced_peak_bytes": peak, "bytes_per_entry": current / entries,
                    "peak_bytes_per_entry": peak / entries}
        click.echo(json.dumps(row))
        rows.append(row)
    return rows


def chart(out_dir: Path) -> None:
    plt = pyplot()
    fig, (mem, cpu) = plt.subplots(1, 2, figsize=(11, 4.2))
    for path in sorted(out_dir.glob("anchor-table-*.json")):
        run = json.loads(path.read_text())
        rows = run["rows"]
        x = [r["documents"] for r in rows]
        if run["trace"]:
            mem.plot(x, [r["bytes_per_entry"] for r in rows], marker="o", label=f"{run['label']} (held)")
            mem.plot(x, [r["peak_bytes_per_entry"] for r in rows], ls="--", marker=".", label=f"{run['label']} (peak)")
        else:
            cpu.plot(x, [r["cpu_us_per_document"] for r in rows], marker="o", label=run["label"])
    mem.set(xscale="log", yscale="log", xlabel="documents", ylabel="bytes per (document, anchor)",
            title="anchor table memory (tracemalloc)")
    cpu.set(xscale="log", xlabel="documents", ylabel="CPU us per document (add + query)",
            title="anchor table CPU (no tracing)")
    mem.legend(fontsize=7)
    cpu.legend(fontsize=7)
    stamp(fig)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(out_dir / "anchor-table.png", dpi=110)


@click.command()
@click.option("--documents", default="100000,200000,500000,1000000", show_default=True,
              help="checkpoints (comma-separated counts)")
@click.option("--table", "table_path", default="stream.index.anchors:AnchorTable", show_default=True,
              help="module:Class of the table measured")
@click.option("--label", default="sorted runs", show_default=True)
@click.option("--trace/--no-trace", default=False, help="tracemalloc on (bytes) or off (CPU)")
@click.option("--seed", default=38, show_default=True)
@click.option("--out", "out_dir", default="bench-results/anchor-table", show_default=True)
def command(documents: str, table_path: str, label: str, trace: bool, seed: int, out_dir: str) -> None:
    """Memory per (document, anchor) and CPU per document of the anchor table as it grows."""
    module, name = table_path.split(":")
    table = getattr(importlib.import_module(module), name)(anchors_of, 64)
    checkpoints = sorted(int(n) for n in documents.split(","))
    if trace:
        tracemalloc.start()
    rows = measure(table, synthetic(checkpoints[-1], seed), checkpoints, trace)
    tag = f"{label.replace(' ', '-')}-{'trace' if trace else 'cpu'}"
    target = save_json(out_dir, f"anchor-table-{tag}", {"label": label, "table": table_path, "trace": trace,
                                                        "seed": seed, "batch": BATCH, "rows": rows})
    chart(Path(out_dir))
    click.echo(f"saved {target}")
