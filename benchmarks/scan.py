"""``python -m benchmarks scan``: ``dedup scan`` on plain 3 KB Chinese text against ``jieba.lcut`` alone over
the same texts, whole processes including start-up (issue 21: scan docs/s >= 0.9x jieba.lcut alone).

Each variant is a fresh process over the same JSONL file (``--docs`` documents of the corpus that
``python -m benchmarks corpus-zh`` builds), timed by wall clock from start to exit; the variants run in
alternating rounds (``--rounds``), so each sees the same minutes of this shared machine. Variants:
- ``jieba.lcut``: reads the file, ``jieba.lcut(text)`` per document (jieba's defaults, HMM on: the
  reference of the target), nothing else;
- ``dedup scan``: the default install and options (``--segmenter auto``: rjieba), verdicts to
  /dev/null, in memory;
- ``dedup scan --segmenter jieba``, ``dedup scan --state DIR`` (the index on disk) and the start-up
  alone (an empty file), for reference.
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import click

from benchmarks.common import DEFAULT_OUT, commit, pyplot, save_json, stamp
from benchmarks.corpus_zh import default_corpus

LCUT = """
import json, sys
import jieba
texts = [json.loads(line)["text"] for line in open(sys.argv[1], encoding="utf-8")]
for text in texts:
    jieba.lcut(text)
"""


def variants(data: Path, empty: Path, state: Path) -> dict[str, list[str]]:
    scan = [sys.executable, "-m", "stream", "scan"]
    return {
        "jieba.lcut": [sys.executable, "-c", LCUT, str(data)],
        "dedup scan": [*scan, str(data), "--out", "/dev/null"],
        "dedup scan --segmenter jieba": [*scan, str(data), "--out", "/dev/null", "--segmenter", "jieba"],
        "dedup scan --state (on disk)": [*scan, str(data), "--out", "/dev/null", "--state", str(state)],
        "start-up (dedup scan, empty file)": [*scan, str(empty), "--out", "/dev/null"],
    }


def sample(corpus: Path, count: int, out: Path) -> int:
    """``count`` documents of the corpus, in a fixed shuffled order (both scripts of the manual
    pages and the reference mixed), written to ``out``; returns how many there were."""
    if not corpus.exists():
        raise click.ClickException(f"no corpus at {corpus}: build it with `python -m benchmarks corpus-zh` "
                                   "(or pass --corpus FILE.jsonl)")
    lines = corpus.read_text(encoding="utf-8").splitlines()
    random.Random(1).shuffle(lines)
    chosen = lines[:count]
    out.write_text("\n".join(chosen) + "\n", encoding="utf-8")
    return len(chosen)


def run_rounds(commands: dict[str, list[str]], rounds: int, state: Path) -> dict[str, list[float]]:
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, command in commands.items():
            for old in state.glob("*"):  # the on-disk variant starts from an empty state each time
                subprocess.run(["rm", "-rf", str(old)], check=True)
            start = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            seconds[name].append(time.perf_counter() - start)
    return seconds


def plot(result: dict[str, object], out: Path) -> None:
    plt = pyplot()
    rows = result["variants"]
    assert isinstance(rows, list)
    names = [row["variant"] for row in rows if row["docs_per_s"] is not None]
    rates = [row["docs_per_s"] for row in rows if row["docs_per_s"] is not None]
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.barh(names, rates, color=["grey" if n == "jieba.lcut" else "tab:blue" for n in names])
    lcut = next(row["docs_per_s"] for row in rows if row["variant"] == "jieba.lcut")
    ax.axvline(0.9 * lcut, color="red", ls="--", lw=1, label="target: 0.9x jieba.lcut alone")
    ax.set_xlabel(f"documents per second, whole process with start-up ({result['docs']} docs of ~3 KB)")
    ax.set_title("dedup scan vs jieba.lcut alone")
    ax.legend(loc="lower right")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    stamp(fig, result["peers"])  # type: ignore[arg-type]
    fig.savefig(out / "scan_vs_lcut.png", dpi=110)
    plt.close(fig)


def corpus_options(name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The options of a whole-process benchmark on the zh3k sample: --corpus, --docs, --rounds, --out
    (``bench-results/NAME`` by default)."""
    options = [
        click.option("--corpus", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="JSONL corpus (default: the one `python -m benchmarks corpus-zh` builds)."),
        click.option("--docs", "count", default=1700, show_default=True, help="Documents of the corpus to scan."),
        click.option("--rounds", default=5, show_default=True, help="Alternating rounds of every variant."),
        click.option("--out", "out_dir", default=f"{DEFAULT_OUT}/{name}", show_default=True,
                     help="Where the JSON and PNG go."),
    ]

    def wrap(function: Callable[..., None]) -> Callable[..., None]:
        for option in reversed(options):
            function = option(function)
        return function

    return wrap


@click.command("scan")
@corpus_options("scan")
def command(corpus: Path | None, count: int, rounds: int, out_dir: str) -> None:
    """dedup scan vs jieba.lcut alone on real ~3 KB Chinese documents, whole processes."""
    with tempfile.TemporaryDirectory(prefix="bench-scan-") as tmp:
        data, empty, state = Path(tmp) / "docs.jsonl", Path(tmp) / "empty.jsonl", Path(tmp) / "state"
        docs = sample(corpus or default_corpus(), count, data)
        empty.write_text("")
        state.mkdir()
        seconds = run_rounds(variants(data, empty, state), rounds, state)
    rows = []
    for name, values in seconds.items():
        median = statistics.median(values)
        rate = None if name.startswith("start-up") else docs / median
        rows.append({"variant": name, "seconds": values, "median_s": median, "docs_per_s": rate})
        shown = "-" if rate is None else f"{rate:,.0f} docs/s"
        click.echo(f"{name:36s} median {median:6.2f} s  {shown}  (rounds: {', '.join(f'{v:.2f}' for v in values)})")
    lcut = next(row["docs_per_s"] for row in rows if row["variant"] == "jieba.lcut")
    scan = next(row["docs_per_s"] for row in rows if row["variant"] == "dedup scan")
    assert isinstance(lcut, float) and isinstance(scan, float)
    click.echo(f"dedup scan / jieba.lcut alone: {scan / lcut:.2f}x (target >= 0.9x)")
    result: dict[str, object] = {
        "docs": docs, "rounds": rounds, "commit": commit(), "ratio_scan_to_lcut": scan / lcut, "target": 0.9,
        "corpus": str(corpus or default_corpus()),
        "peers": {"jieba": version("jieba"), "rjieba": version("rjieba")},
        "reference": "jieba.lcut(text) with jieba's defaults (HMM on), one process reading the same JSONL",
        "variants": rows,
    }
    path = save_json(out_dir, "scan_vs_lcut", result)
    plot(result, Path(out_dir))
    click.echo(f"saved {path} and {Path(out_dir) / 'scan_vs_lcut.png'}")
