"""``dedup scan``: one JSON verdict line per input document, in input order."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from typing import IO, Any

import click

from stream.batch.state import ScanState, open_state
from stream.errors import DedupError
from stream.fingerprint import FingerprintConfig, parse_document
from stream.fingerprint.schema import SIMHASH_FEATURES


def iter_lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    for number, line in enumerate(stream, start=1):
        if line.strip():
            yield number, line


def scan_stream(state: ScanState, lines: Iterator[tuple[int, bytes]], out: IO[str],
                errors: IO[str]) -> Counter[str]:
    """Judge every line; bad lines are reported (with their line numbers) and counted, never fatal."""
    counts: Counter[str] = Counter()
    for number, line in lines:
        try:
            doc = parse_document(line)
            fp = state.fingerprinter.fingerprint(doc)
        except DedupError as exc:
            counts["errors"] += 1
            errors.write(json.dumps({"line": number, "error": str(exc)}, ensure_ascii=False) + "\n")
            continue
        verdict = state.detector.detect(fp, (float(state.next_seq), doc.id))
        state.next_seq += 1
        counts[verdict.verdict] += 1
        out.write(json.dumps(verdict.to_json(), ensure_ascii=False) + "\n")
    return counts


def _progress_lines(path: str, lines: Iterator[tuple[int, bytes]], total: int | None) -> Iterator[tuple[int, bytes]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("scan"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task(path, total=total)
        for item in lines:
            yield item
            bar.advance(task)


@click.command("scan")
@click.argument("infile", type=click.Path(allow_dash=True, dir_okay=False))
@click.option("--out", "outfile", type=click.Path(dir_okay=False, writable=True), default="-",
              help="Where verdict lines go (default: standard output).")
@click.option("-k", "k", type=click.IntRange(0, 31), default=3, show_default=True,
              help="SimHash Hamming radius of the lossless block tables.")
@click.option("--threshold", type=click.FloatRange(0, 1), default=0.8, show_default=True,
              help="Verified similarity at or above which two documents are near-duplicates.")
@click.option("--state", "state_dir", type=click.Path(file_okay=False), default=None,
              help="Keep the index in this directory between runs (incremental processing).")
@click.option("--segmenter", type=click.Choice(["auto", "rjieba", "jieba"]), default="auto", show_default=True,
              help="Word segmenter; all give the same tokens (auto: rjieba, else jieba).")
@click.option("--simhash-features", type=click.Choice(SIMHASH_FEATURES), default=FingerprintConfig.simhash_features,
              show_default=True)
@click.option("--weighting", default=FingerprintConfig.weighting, show_default=True,
              help="binary | tf | tfidf | tfidf_len | seed004")
@click.option("--idf", type=click.Choice(["jieba", "stream"]), default="jieba", show_default=True,
              help="IDF for the tfidf weightings: jieba's table, or learned from the documents (kept in --state).")
@click.option("--bands", type=click.IntRange(0, 64), default=FingerprintConfig.bands, show_default=True,
              help="MinHash LSH band tables (0: SimHash tables only).")
@click.option("--errors", "errors_file", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write bad-line reports here as JSON lines (default: standard error).")
def command(infile: str, outfile: str, k: int, threshold: float, state_dir: str | None, segmenter: str,
            simhash_features: str, weighting: str, idf: str, bands: int, errors_file: str | None) -> None:
    """Judge every document of INFILE (JSONL, '-' for stdin) against all earlier ones."""
    config = FingerprintConfig(segmenter=segmenter, simhash_features=simhash_features,
                               weighting=weighting, idf=idf, bands=bands)
    try:
        state = open_state(state_dir, config, k, threshold)
    except DedupError as exc:
        raise click.ClickException(str(exc)) from None
    started = time.perf_counter()
    with ExitStack() as stack:
        stack.callback(state.close)
        source: Any = (sys.stdin.buffer if infile == "-" else stack.enter_context(open(infile, "rb")))
        out = sys.stdout if outfile == "-" else stack.enter_context(open(outfile, "w", encoding="utf-8"))
        err = sys.stderr if errors_file is None else stack.enter_context(open(errors_file, "w", encoding="utf-8"))
        lines = iter_lines(source)
        if sys.stderr.isatty() and infile != "-":
            lines = _progress_lines(infile, lines, None)
        counts = scan_stream(state, lines, out, err)
    elapsed = time.perf_counter() - started
    docs = sum(v for key, v in counts.items() if key != "errors")
    summary = ", ".join(f"{key} {counts[key]}" for key in ("unique", "duplicate", "near_duplicate", "empty", "errors"))
    click.echo(f"scanned {docs} documents in {elapsed:.1f}s ({docs / max(elapsed, 1e-9):.0f} docs/s): {summary}",
               err=True)
