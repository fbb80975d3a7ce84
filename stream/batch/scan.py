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

from stream.batch.state import Matching, ScanState, open_state
from stream.detect import MAX_MATCHES, build_verdict
from stream.detect.detector import CONTAINMENT_MIN_SHINGLES, CONTAINMENT_THRESHOLD
from stream.errors import EXIT_REJECTED, DocumentError
from stream.fingerprint import FingerprintConfig, parse_document
from stream.fingerprint.schema import SIMHASH_FEATURES


def iter_lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    for number, line in enumerate(stream, start=1):
        if line.strip():
            yield number, line


def scan_stream(state: ScanState, lines: Iterator[tuple[int, bytes]], out: IO[str],
                errors: IO[str] | None = None, max_matches: int = MAX_MATCHES) -> Counter[str]:
    """Judge every line; a bad line is reported (its number and the reason, on standard error and as a
    JSON line in ``errors``) and counted, never fatal."""
    counts: Counter[str] = Counter()
    for number, line in lines:
        try:
            doc = parse_document(line)
            fp = state.fingerprinter.fingerprint(doc)
        except DocumentError as exc:
            counts["rejected"] += 1
            print(f"line {number}: {exc}", file=sys.stderr)
            if errors is not None:
                errors.write(json.dumps({"line": number, "code": exc.code, "error": str(exc)},
                                        ensure_ascii=False) + "\n")
            continue
        order = (float(state.next_seq), doc.id)
        verdict = build_verdict(fp, order, state.detector.probe(fp, order), max_matches)
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


@click.command("scan", epilog="Exit codes: 0 every line judged; 1 some lines rejected (each reported, every "
               "good line still judged); 2 a bad option or file; 3 a state directory built with other settings.")
@click.argument("infile", type=click.Path(exists=True, allow_dash=True, dir_okay=False))
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
              show_default=True, help="SimHash over weighted words or over the shingles.")
@click.option("--weighting", type=click.Choice(["tf", "binary", "tfidf", "tfidf_len", "seed004"]),
              default=FingerprintConfig.weighting, show_default=True,
              help="Word weights of the SimHash (docs/text.md; seed004 = POS-weighted SimHash, docs/references.md).")
@click.option("--idf", type=click.Choice(["jieba", "stream"]), default="jieba", show_default=True,
              help="IDF for the tfidf weightings: jieba's table, or learned from the documents (kept in --state).")
@click.option("--bands", type=click.IntRange(0, 64), default=FingerprintConfig.bands, show_default=True,
              help="MinHash LSH band tables (0: SimHash tables only).")
@click.option("--short-text-chars", type=click.IntRange(0), default=FingerprintConfig.short_text_chars,
              show_default=True, help="Texts up to this many characters are also verified on character 3-grams "
              "(README, Short texts); 0: off.")
@click.option("--max-matches", type=click.IntRange(1), default=MAX_MATCHES, show_default=True,
              help="Matches a verdict lists at most (match_count has them all).")
@click.option("--containment-threshold", type=click.FloatRange(0, 1), default=CONTAINMENT_THRESHOLD,
              show_default=True, help="Below --threshold, still report a pair as 'contained' when this share of "
              "the shorter document's shingles is in the longer one (0: off).")
@click.option("--containment-min-shingles", type=click.IntRange(0), default=CONTAINMENT_MIN_SHINGLES,
              show_default=True, help="The shorter document needs this many distinct shingles to be 'contained' "
              "(about as many characters of Chinese, or words of English).")
@click.option("--prefix-bands", type=click.IntRange(0, 64), default=FingerprintConfig.prefix_bands,
              show_default=True, help="LSH band tables over the first characters of each document: they find "
              "truncated and excerpted copies as candidates (0: none).")
@click.option("--errors", "errors_file", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Also write each rejected line as a JSON line {line, code, error} to this file.")
def command(infile: str, outfile: str, k: int, threshold: float, state_dir: str | None, segmenter: str,
            simhash_features: str, weighting: str, idf: str, bands: int, short_text_chars: int, max_matches: int,
            containment_threshold: float, containment_min_shingles: int, prefix_bands: int,
            errors_file: str | None) -> None:
    """Judge every document of INFILE (JSONL, '-' for stdin) against all earlier ones.

    One verdict line per document, in input order. A bad line is reported on standard error with its
    number and reason and skipped."""
    config = FingerprintConfig(segmenter=segmenter, simhash_features=simhash_features,
                               weighting=weighting, idf=idf, bands=bands, short_text_chars=short_text_chars,
                               prefix_bands=prefix_bands)
    matching = Matching(threshold, containment_threshold, containment_min_shingles)
    started = time.perf_counter()
    with ExitStack() as stack:
        source: Any = (sys.stdin.buffer if infile == "-" else stack.enter_context(open(infile, "rb")))
        out = sys.stdout if outfile == "-" else stack.enter_context(open(outfile, "w", encoding="utf-8"))
        err = None if errors_file is None else stack.enter_context(open(errors_file, "w", encoding="utf-8"))
        state = open_state(state_dir, config, k, matching)
        stack.callback(state.close)
        lines = iter_lines(source)
        if sys.stderr.isatty() and infile != "-":
            lines = _progress_lines(infile, lines, None)
        counts = scan_stream(state, lines, out, err, max_matches)
    elapsed = time.perf_counter() - started
    docs = sum(v for key, v in counts.items() if key != "rejected")
    summary = ", ".join(f"{key} {counts[key]}" for key in ("unique", "duplicate", "near_duplicate", "empty",
                                                            "rejected"))
    click.echo(f"scanned {docs} documents in {elapsed:.1f}s ({docs / max(elapsed, 1e-9):.0f} docs/s): {summary}",
               err=True)
    if counts["rejected"]:
        sys.exit(EXIT_REJECTED)
