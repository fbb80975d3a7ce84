"""``python -m benchmarks peers``: ``dedup scan`` against what a user would write instead, whole processes.

The peers are streaming loops over MinHash LSH libraries with the shingles the ground truth uses
(character 5-grams of the text without whitespace): for each document, build its MinHash, query
the LSH for earlier near-duplicates, insert it. They segment nothing, compute no SimHash, verify
nothing and keep nothing on disk, but they are what a deployment's cost is compared with:
- ``datasketch``: ``MinHash(num_perm=128)`` filled by ``update_batch`` (datasketch's fast path),
  ``MinHashLSH(threshold=0.8, num_perm=128)``;
- ``rensa``: ``RMinHash(num_perm=128)``, ``RMinHashLSH(threshold=0.8, num_perm=128, num_bands=16)``
  (Rust).
Every variant is a fresh process over the same JSONL (the documents ``python -m benchmarks scan`` samples
from ``python -m benchmarks corpus-zh``), start-up included, on a warm machine: one untimed round first
(numba's caches, the dictionary arrays), and Python's bytecode cached as an installed package has it
(``PYTHONDONTWRITEBYTECODE`` is dropped from the children's environment: with it, an editable
checkout recompiles its ~75 imported modules from source at every start, ~0.15 s). The variants run in
alternating rounds, in reversed order every other round. Child CPU time is the main figure (the machine may be shared;
wall time is recorded too). Also measured: ``dedup scan`` of a one-document file (start-up: imports,
numba loading its cached kernels, the first verdict), from which the steady-state rate of the other
documents follows, and the time from starting ``dedup scan`` on that file to reading its verdict
line (time to first verdict).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from benchmarks.common import children_cpu_seconds, commit, pyplot, save_json, stamp, versions
from benchmarks.corpus_zh import default_corpus
from benchmarks.scan import corpus_options, sample

# Each peer reads the same JSONL, then one loop: shingles -> MinHash -> query -> insert.
_READ = """
import json, sys
texts = [json.loads(line)["text"] for line in open(sys.argv[1], encoding="utf-8")]
def shingles(text, n=5):
    s = "".join(text.split())
    return {s[i:i + n] for i in range(max(len(s) - n + 1, 1))} if s else set()
found = 0
"""
PEERS = {
    "datasketch": _READ + """
from datasketch import MinHash, MinHashLSH
lsh = MinHashLSH(threshold=0.8, num_perm=128)
for i, text in enumerate(texts):
    m = MinHash(num_perm=128)
    m.update_batch([s.encode("utf-8") for s in shingles(text)])
    found += bool(lsh.query(m))
    lsh.insert(str(i), m)
print(found)
""",
    "rensa": _READ + """
from rensa import RMinHash, RMinHashLSH
lsh = RMinHashLSH(threshold=0.8, num_perm=128, num_bands=16)
for i, text in enumerate(texts):
    m = RMinHash(num_perm=128, seed=42)
    m.update(list(shingles(text)))
    found += bool(lsh.query(m))
    lsh.insert(i, m)
print(found)
""",
}
OURS = "dedup scan"
STARTUP = "dedup scan, one document"
TARGETS = {"datasketch": 2.0, "rensa": 0.4}  # dedup scan's speed / the peer's, CPU time, start-up included
STEADY_TARGET = 2000.0  # documents per CPU second after start-up


def _command(variant: str, data: Path, one: Path) -> list[str]:
    scan = [sys.executable, "-m", "stream", "scan"]
    if variant == OURS:
        return [*scan, str(data), "--out", "/dev/null"]
    if variant == STARTUP:
        return [*scan, str(one), "--out", "/dev/null"]
    return [sys.executable, "-c", PEERS[variant], str(data)]


# the children's environment: bytecode written once and reused, as by an installed package
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def run_once(command: list[str]) -> tuple[float, float]:
    """(wall seconds, child CPU seconds) of one whole process."""
    before = children_cpu_seconds()
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise click.ClickException(f"{command[:4]} failed: {done.stderr.strip()[-500:]}")
    return wall, children_cpu_seconds() - before


def first_verdict(one: Path) -> float:
    """Seconds from starting ``dedup scan`` on a one-document file to reading its verdict line."""
    started = time.perf_counter()
    with subprocess.Popen([sys.executable, "-m", "stream", "scan", str(one)], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, env=ENV) as proc:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        seconds = time.perf_counter() - started
        proc.wait()
    if not line.startswith(b"{"):
        raise click.ClickException("dedup scan wrote no verdict for the one-document file")
    return seconds


def measure(data: Path, one: Path, rounds: int) -> dict[str, dict[str, list[float]]]:
    variants = [OURS, *PEERS, STARTUP]
    runs: dict[str, dict[str, list[float]]] = {v: {"wall_s": [], "cpu_s": []} for v in variants}
    runs["first verdict"] = {"wall_s": []}
    for variant in variants:  # untimed: caches and bytecode written, as on a machine that has run it before
        run_once(_command(variant, data, one))
    for r in range(rounds):
        for variant in variants if r % 2 == 0 else variants[::-1]:  # neither side always runs first
            wall, cpu = run_once(_command(variant, data, one))
            runs[variant]["wall_s"].append(round(wall, 3))
            runs[variant]["cpu_s"].append(round(cpu, 3))
        runs["first verdict"]["wall_s"].append(round(first_verdict(one), 3))
    return runs


def summarize(runs: dict[str, dict[str, list[float]]], docs: int) -> dict[str, Any]:
    cpu = {v: statistics.median(r["cpu_s"]) for v, r in runs.items() if "cpu_s" in r}
    out: dict[str, Any] = {"median_cpu_s": cpu,
                           "median_wall_s": {v: statistics.median(r["wall_s"]) for v, r in runs.items()}}
    rounds = len(runs[OURS]["cpu_s"])
    out["speed_vs_peer"] = {}
    for peer in PEERS:
        per_round = [p / o for p, o in zip(runs[peer]["cpu_s"], runs[OURS]["cpu_s"], strict=True)]
        out["speed_vs_peer"][peer] = {"cpu_median_of_rounds": round(statistics.median(per_round), 3),
                                      "cpu_of_medians": round(cpu[peer] / cpu[OURS], 3),
                                      "wall_of_medians": round(out["median_wall_s"][peer]
                                                               / out["median_wall_s"][OURS], 3),
                                      "target": TARGETS[peer]}
    steady = [(docs - 1) / (full - start) for full, start in zip(runs[OURS]["cpu_s"], runs[STARTUP]["cpu_s"],
                                                                    strict=True) if full > start]
    out["steady_docs_per_cpu_s"] = round(statistics.median(steady), 1) if steady else None
    out["steady_target"] = STEADY_TARGET
    out["rounds"] = rounds
    return out


def plot(result: dict[str, Any], out: Path) -> None:
    plt = pyplot()
    summary = result["summary"]
    names = [OURS, *PEERS]
    rates = [result["docs"] / summary["median_cpu_s"][n] for n in names]
    fig, ax = plt.subplots(figsize=(9, 3.6))
    ax.barh(names, rates, color=["tab:red" if n == OURS else "tab:blue" for n in names])
    for y, name in enumerate(names):
        ax.text(rates[y], y, f" {rates[y]:,.0f}/s ({summary['median_cpu_s'][name]:.2f} s)", va="center", fontsize=8)
    ax.set_xlabel(f"documents per CPU second, whole process with start-up ({result['docs']} docs of ~3 KB, "
                  f"median of {summary['rounds']} rounds)")
    speed = summary["speed_vs_peer"]
    ax.set_title("dedup scan vs streaming MinHash LSH loops: " + ", ".join(
        f"{speed[p]['cpu_median_of_rounds']}x {p} (target {speed[p]['target']}x)" for p in PEERS), fontsize=9)
    ax.set_xlim(0, max(rates) * 1.35)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    stamp(fig, result["peers"])
    fig.savefig(out / "peers.png", dpi=110)
    plt.close(fig)


@click.command("peers")
@corpus_options("peers")
def command(corpus: Path | None, count: int, rounds: int, out_dir: str) -> None:
    """dedup scan vs datasketch and rensa MinHash LSH loops on real ~3 KB Chinese documents."""
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        data, one = Path(tmp) / "docs.jsonl", Path(tmp) / "one.jsonl"
        docs = sample(corpus or default_corpus(), count, data)
        one.write_text(data.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
        runs = measure(data, one, rounds)
    summary = summarize(runs, docs)
    for variant, median in summary["median_cpu_s"].items():
        click.echo(f"{variant:24s} median CPU {median:6.2f} s, wall {summary['median_wall_s'][variant]:6.2f} s "
                   f"(CPU by round: {', '.join(f'{v:.2f}' for v in runs[variant]['cpu_s'])})")
    click.echo(f"time to first verdict: median {summary['median_wall_s']['first verdict']:.3f} s wall")
    for peer, speed in summary["speed_vs_peer"].items():
        click.echo(f"dedup scan / {peer}: {speed['cpu_median_of_rounds']}x by CPU (target >= {speed['target']}x), "
                   f"{speed['wall_of_medians']}x by wall")
    click.echo(f"steady state: {summary['steady_docs_per_cpu_s']} documents per CPU second "
               f"(target >= {STEADY_TARGET:,.0f})")
    result: dict[str, Any] = {
        "docs": docs, "corpus": str(corpus or default_corpus()), "commit": commit(),
        "peers": versions("datasketch", "rensa", "rjieba", "numba"),
        "shingles": "character 5-grams of the text without whitespace (the ground truth's)",
        "warm": "one untimed round first; bytecode (.pyc) written and reused, as by an installed package",
        "summary": summary, "runs": runs,
    }
    path = save_json(out_dir, "peers", result)
    plot(result, Path(out_dir))
    click.echo(f"saved {path} and {Path(out_dir) / 'peers.png'}")
