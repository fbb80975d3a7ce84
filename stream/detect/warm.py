"""Compiling the index's kernels before the first real batch (``warm_up``)."""

from __future__ import annotations

from dataclasses import replace

from stream.detect.detector import Detector
from stream.fingerprint import Fingerprint
from stream.index import compile_rare_kernels


def warm_up(detector: Detector, fp: Fingerprint) -> None:
    """Run the paths of ``detector``'s index that call compiled kernels, on copies of ``fp``. numba
    compiles a kernel at its first call in a fresh install (0.3-1 s each on a 2-core VM) and later
    processes load it from its cache: a throwaway detector warmed here keeps that wait out of the
    first batch a worker or a benchmark times. The paths: a batch (root filter and appends, level
    counters, pairs inside the run, the band map), the one-document path on roots the batch left in
    the root arena (taking them out), a batch that moves them back in, a deletion, and the kernels
    that only growth and compaction reach (``compile_rare_kernels``)."""
    copies = [replace(fp, doc_id=f"warm-up-{n}") for n in range(4)]
    orders = [(float(n), copy.doc_id) for n, copy in enumerate(copies)]
    detector.probe_many(copies[:2], orders[:2])
    # the one-document path, which the batch path hands some documents to
    detector.index.query(copies[2].simhash, tuple(copies[2].bands))
    detector.insert(copies[2], orders[2])
    detector.probe_many(copies[3:], orders[3:])
    detector.forget(copies[0].doc_id)
    compile_rare_kernels()
