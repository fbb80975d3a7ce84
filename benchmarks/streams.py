"""Streams of fingerprints as the product indexes them, for ``python -m benchmarks index``'s product rows.

A document of the stream is a whole ``Fingerprint``: a SimHash from a distribution of
``bench.index.fingerprints`` (skewed: 20% share one 16-bit block), and a shingle set of ``shingles``
random 64-bit hashes (a ~3 KB text has ~3,000 character 5-grams) from which the real code makes the
verification sketch (512 bytes of 1-bit MinHash) and the LSH bands (16 over the set, 8 over its
first 400 hashes, as the prefix bands take a text's first 400 characters). A share ``near`` of the
documents are near copies of an earlier one: its shingle set with 2-10% of the hashes replaced
(Jaccard ~0.8-0.96, so ~60% of the bands collide) and its SimHash with 0-5 bits flipped. The
serialized fingerprint (~830 bytes) is the payload each index record keeps. Deterministic in ``seed``.
"""

from __future__ import annotations

import numpy as np

from benchmarks.index_runs import fingerprints
from stream.fingerprint import Fingerprint
from stream.fingerprint.bands import lsh_bands
from stream.fingerprint.schema import FingerprintConfig
from stream.fingerprint.sketch import SketchSpec, make_sketch

SCHEMA = "bench-stream"


def _shingles(seed: int, root: int, size: int) -> np.ndarray:
    return np.random.default_rng((seed, root)).integers(0, np.iinfo(np.uint64).max, size=size, dtype=np.uint64)


def stream(distribution: str, n: int, near: float = 0.05, seed: int = 1, shingles: int = 3000,
           config: FingerprintConfig | None = None) -> list[Fingerprint]:
    """The stream's fingerprints, with the bands of ``config`` (default: the product's): whole-document
    bands over the shingle set and prefix bands over its first ``prefix_chars`` hashes."""
    cfg = config or FingerprintConfig()
    rng = np.random.default_rng(seed)
    sims = fingerprints(distribution, n, seed=seed)
    spec = SketchSpec()
    roots: list[int] = []
    out: list[Fingerprint] = []
    for i in range(n):
        root, simhash = i, sims[i]
        hashes = None
        if i and rng.random() < near:
            j = int(rng.integers(0, i))
            root, simhash = roots[j], out[j].simhash
            hashes = _shingles(seed, root, shingles)
            changed = int(len(hashes) * rng.uniform(0.02, 0.1))
            hashes[rng.choice(len(hashes), changed, replace=False)] = rng.integers(
                0, np.iinfo(np.uint64).max, size=changed, dtype=np.uint64)
            for bit in rng.choice(64, int(rng.integers(0, 6)), replace=False).tolist():
                simhash ^= 1 << bit
        if hashes is None:
            hashes = _shingles(seed, root, shingles)
        roots.append(root)
        unique = np.unique(hashes)
        bands = lsh_bands(unique, cfg.bands, cfg.rows)
        if cfg.prefix_bands:
            bands += lsh_bands(np.unique(hashes[: cfg.prefix_chars]), cfg.prefix_bands, cfg.prefix_rows)
        out.append(Fingerprint(f"doc-{i}", simhash, rng.bytes(16), make_sketch(unique, spec), bands, SCHEMA, spec))
    return out
