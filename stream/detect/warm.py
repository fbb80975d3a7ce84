"""Compiling the kernels of the index and of verification before the first real batch (``warm_up``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from stream.detect.detector import Detector
from stream.fingerprint import Fingerprint, Fingerprinter, parse_document
from stream.index import compile_rare_kernels

# a short text (its sketch keeps every hash) for the index's paths
WARM_TEXT = "床前明月光，疑是地上霜。举头望明月，低头思故乡。" * 10


def sampled_texts() -> list[str]:
    """Three texts long enough for their sketches to keep a hash sample (800 distinct characters, so
    ~800 shingles): one, a shorter one holding most of it and a longer one holding all of it."""
    chars = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(1100))
    return [chars[:800], chars[:700] + chars[900:960], chars[:1000]]


def warm_up_fingerprints(fingerprinter: Fingerprinter) -> tuple[Fingerprint, list[Fingerprint]]:
    """What ``warm_up`` takes: the fingerprints of ``WARM_TEXT`` and of ``sampled_texts()``."""
    def of(doc_id: str, text: str) -> Fingerprint:
        return fingerprinter.fingerprint(parse_document({"id": doc_id, "text": text}))

    return of("warm-up", WARM_TEXT), [of(f"warm-up-{n}", text) for n, text in enumerate(sampled_texts())]


def warm_up(detector: Detector, fp: Fingerprint, sampled: Sequence[Fingerprint] = ()) -> None:
    """Run the paths of ``detector``'s index that call compiled kernels, on copies of ``fp``. numba
    compiles a kernel at its first call in a fresh install (0.3-1 s each on a 2-core VM) and later
    processes load it from its cache: a throwaway detector warmed here keeps that wait out of the
    first batch a worker or a benchmark times. The paths: a batch (root filter and appends, level
    counters, pairs inside the run, the band map), the one-document path on roots the batch left in
    the root arena (taking them out), a batch that moves them back in, a deletion, and the kernels
    that only growth and compaction reach (``compile_rare_kernels``). ``sampled``: fingerprints of
    ``sampled_texts()``; the first is stored, then the others are verified against it and each other,
    which counts containment on the hash samples of a stored and of a new sketch."""
    copies = [replace(fp, doc_id=f"warm-up-{n}") for n in range(4)]
    orders = [(float(n), copy.doc_id) for n, copy in enumerate(copies)]
    detector.probe_many(copies[:2], orders[:2])
    # the one-document path, which the batch path hands some documents to
    detector.index.query(copies[2].simhash, tuple(copies[2].bands))
    detector.insert(copies[2], orders[2])
    detector.probe_many(copies[3:], orders[3:])
    detector.forget(copies[0].doc_id)
    compile_rare_kernels()
    named = [replace(one, doc_id=f"warm-up-sampled-{n}") for n, one in enumerate(sampled)]
    orders = [(10.0 + n, one.doc_id) for n, one in enumerate(named)]
    detector.probe_many(named[:1], orders[:1])
    detector.probe_many(named[1:], orders[1:])
