"""``dedup scan``: one JSON verdict line per input document, in input order.

A line ``{"id": X, "op": "delete"}`` removes X from the state (its output line says whether X was there).
With ``--retention``, the canonical order is the documents' event time ``ts`` (as in the stream; equal
times in file order), every document needs one, and index entries too old to match anything are deleted
as the scan goes. A scan never rewrites a verdict line, so the input should be in ts order: a line that
comes after a line with a later ts is still judged, but not paired with the later ones (counted as
"out of order" in the summary).

A line with an earlier ``ts`` than the version of its id the scan already holds is an older version: its
output line is ``{"id": X, "superseded": true, "ts": ..., "newer_ts": ...}`` and nothing changes, as in
the stream (docs/service.md, "One truth per id").
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from typing import IO, Any

import click

from stream.batch.known import Placed
from stream.batch.scan_state import ScanState, open_state
from stream.detect import MAX_MATCHES, build_verdict
from stream.errors import EXIT_REJECTED, DocumentError
from stream.fingerprint import Fingerprint, parse_document
from stream.fingerprint.document import DELETE
from stream.options import build, detection_options
from stream.startup import lean_cache_loads

EXPIRE_EVERY = 1000  # documents between two expiries of old entries (with --retention)
LATE_ALLOWANCE = 3600.0  # seconds a document may arrive late and still find its matches (docs/usage.md, "Lifecycle")


def iter_lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    for number, line in enumerate(stream, start=1):
        if line.strip():
            yield number, line


# Documents per Detector.probe_many call: the index's batch path costs about the same per document
# from a few hundred on (docs/index.md, "Batch path"), and a verdict waits at most this many lines.
CHUNK = 512


def scan_stream(state: ScanState, lines: Iterator[tuple[int, bytes]], out: IO[str],
                errors: IO[str] | None = None, max_matches: int = MAX_MATCHES, chunk: int = CHUNK) -> Counter[str]:
    """Judge every line, in input order, up to ``chunk`` documents per detector call (what the
    per-document loop gives: anything that changes the index besides judging, a delete or a new
    version of a known id, waits for the documents before it); a bad line is reported (its number
    and the reason, on standard error and as a JSON line in ``errors``, after the verdicts of the
    lines before it) and counted, never fatal."""
    counts: Counter[str] = Counter()
    judge = _Chunk(state, out, counts, max_matches)
    for number, line in lines:
        try:
            doc = parse_document(line)
            newer_ts = state.known.older_than_known(doc.id, doc.ts)
            if newer_ts is not None:
                judge.flush()  # lines in input order
                counts["superseded"] += 1
                out.write(json.dumps({"id": doc.id, "superseded": True, "ts": doc.ts, "newer_ts": newer_ts},
                                     ensure_ascii=False) + "\n")
                continue
            if doc.op == DELETE:
                judge.flush()  # the documents before it are indexed first
                found = state.detector.forget(doc.id)
                state.known.forget(doc.id)
                counts["deleted" if found else "delete_unknown"] += 1
                out.write(json.dumps({"id": doc.id, "op": DELETE, "found": found}) + "\n")
                continue
            if judge.by_time and doc.ts is None:
                raise DocumentError("with --retention every document needs a 'ts' (its event time)", code="bad_ts")
            fp = state.fingerprinter.fingerprint(doc)
        except DocumentError as exc:
            judge.flush()
            counts["rejected"] += 1
            print(f"line {number}: {exc}", file=sys.stderr)
            if errors is not None:
                errors.write(json.dumps({"line": number, "code": exc.code, "error": str(exc)},
                                        ensure_ascii=False) + "\n")
            continue
        judge.add(fp, doc.ts)
        if len(judge.fps) >= chunk or judge.expiry_due():
            judge.flush()
    judge.flush()
    return counts


class _Chunk:
    """The documents waiting for one ``Detector.probe_many`` call, and what judging them updates."""

    def __init__(self, state: ScanState, out: IO[str], counts: Counter[str], max_matches: int) -> None:
        self.state, self.out, self.counts, self.max_matches = state, out, counts, max_matches
        self.by_time = state.detector.retention is not None
        self.newest = float("-inf")
        self.fps: list[Fingerprint] = []
        self.placed: list[Placed] = []

    def add(self, fp: Fingerprint, ts: float | None) -> None:
        state = self.state
        fresh = (ts if self.by_time and ts is not None else float(state.next_seq + len(self.fps)), fp.doc_id)
        # a document seen before keeps its place; a new version of one leaves the index first
        placed = state.known.place(fp, fresh, state.detector, before_forget=self.flush,  # may flush: then append
                                   event_ts=ts)
        self.placed.append(placed)
        self.fps.append(fp)

    def expiry_due(self) -> bool:
        """Whether the last document added is one after which old entries expire (every EXPIRE_EVERY
        documents, with --retention): the chunk ends there, so expiry sees what the loop would."""
        return self.by_time and (self.state.next_seq + len(self.fps)) % EXPIRE_EVERY == 0

    def flush(self) -> None:
        if not self.fps:
            return
        state, counts = self.state, self.counts
        last_id = "\U0010ffff"  # verdict orders with equal times: what arrived before counts as earlier
        orders = [placed.order for placed in self.placed]
        found = state.detector.probe_many(self.fps, orders, fp_bytes=[placed.payload for placed in self.placed])
        lines = []
        for fp, placed, matches in zip(self.fps, self.placed, found, strict=True):
            order = placed.order
            verdict_order = (order[0], last_id) if self.by_time and not placed.again else order
            verdict = build_verdict(fp, verdict_order, matches, self.max_matches)
            state.next_seq += 1
            counts[verdict.verdict] += 1
            lines.append(json.dumps(verdict.to_json(), ensure_ascii=False) + "\n")
            if self.by_time:
                counts["out_of_order"] += order[0] < self.newest
                self.newest = max(self.newest, order[0])
        self.out.write("".join(lines))
        if self.by_time and state.next_seq % EXPIRE_EVERY == 0:
            counts["expired"] += state.detector.expire(self.newest, LATE_ALLOWANCE)
        self.fps, self.placed = [], []
        # What survives a chunk is the index's (cached buckets, the decoded-fingerprint cache), without
        # reference cycles: out of the collector's sight, its full collections stop walking a growing
        # index (~5 us per document at 120k documents, docs/index.md "Batch path").
        gc.freeze()


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
@click.option("--state", "state_dir", type=click.Path(file_okay=False), default=None,
              help="Keep the index in this directory between runs (incremental processing).")
@detection_options()
@click.option("--idf", type=click.Choice(["jieba", "stream"]), default="jieba", show_default=True,
              help="IDF for the tfidf weightings: jieba's table, or learned from the documents (kept in --state).")
@click.option("--errors", "errors_file", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Also write each rejected line as a JSON line {line, code, error} to this file.")
def command(infile: str, outfile: str, state_dir: str | None, idf: str, errors_file: str | None,
            **detection: Any) -> None:
    """Judge every document of INFILE (JSONL, '-' for stdin) against all earlier ones.

    One verdict line per document, in input order. A bad line is reported on standard error with its
    number and reason and skipped."""
    lean_cache_loads()  # ~0.15 s less before the first verdict (stream.startup)
    config, matching = build(detection, idf=idf)
    started = time.perf_counter()
    with ExitStack() as stack:
        source: Any = (sys.stdin.buffer if infile == "-" else stack.enter_context(open(infile, "rb")))
        out = sys.stdout if outfile == "-" else stack.enter_context(open(outfile, "w", encoding="utf-8"))
        err = None if errors_file is None else stack.enter_context(open(errors_file, "w", encoding="utf-8"))
        state = open_state(state_dir, config, matching)
        stack.callback(state.close)
        lines = iter_lines(source)
        if sys.stderr.isatty() and infile != "-":
            lines = _progress_lines(infile, lines, None)
        counts = scan_stream(state, lines, out, err, matching.max_matches)
    elapsed = time.perf_counter() - started
    docs = sum(counts[key] for key in ("unique", "duplicate", "near_duplicate", "empty"))
    summary = ", ".join(f"{key} {counts[key]}" for key in ("unique", "duplicate", "near_duplicate", "empty",
                                                            "rejected"))
    extra = "".join(f", {key.replace('_', ' ')} {counts[key]}"
                    for key in ("deleted", "delete_unknown", "superseded", "expired", "out_of_order") if counts[key])
    click.echo(f"scanned {docs} documents in {elapsed:.1f}s ({docs / max(elapsed, 1e-9):.0f} docs/s): "
               f"{summary}{extra}", err=True)
    if counts["rejected"]:
        sys.exit(EXIT_REJECTED)
