"""``python -m tests.harness.warm``: fill numba's on-disk cache with the kernels a worker compiles at start
(the same calls as its warm-up), before the test processes need them.

In a fresh install the first process to call a kernel compiles it (~31 s of CPU for these); every
later one loads it from the cache (~1 s). tests/conftest.py runs this once per session, ahead of the
pytest-xdist workers, so that they and the worker subprocesses they start load the kernels instead of
each compiling them at the same time. The index's kernels compile in a second process, on a
fingerprint of the same types made without the fingerprint kernels, then the text normalization's
kernels and those only the tests reach (~14 s); meanwhile the first process compiles the
fingerprint's own, normalizing by the reference, then verification's (~16 s), so both cores work
(17-23 s of wall time on a clean clone, 2 cores).
"""

from __future__ import annotations

import subprocess
import sys
from unittest import mock

import numpy as np

from stream.detect import WARM_TEXT, warm_up, warm_up_fingerprints
from stream.fingerprint import Fingerprint, FingerprintConfig, Fingerprinter, parse_document
from stream.fingerprint.features import IDF_WEIGHTINGS, idf_features, idf_simhash
from stream.fingerprint.shingles import shingle_hashes
from stream.fingerprint.sketch import EXACT, Sketch
from stream.index import BlockIndex
from stream.service.settings import load_settings
from stream.storage import MemoryStore
from stream.text.dictionary import cut_han_run
from stream.text.idf import jieba_idf
from stream.text.normal_form import normalize, normalize_reference

INDEX_ONLY = "--index-only"


def made_up_fingerprint(config: FingerprintConfig) -> Fingerprint:
    """A fingerprint with the types of the real one below (an exact sketch of a short text, 64-bit band
    values and extensions), made without kernels."""
    rng = np.random.default_rng(1)
    sketch = Sketch(EXACT, np.unique(rng.integers(0, 2**32, 24, dtype=np.uint32)), 24)
    bands = [(int(rng.integers(0, 2**63)), int(rng.integers(0, 2**63))) for _ in range(config.band_tables)]
    return Fingerprint("warm-up", 0x0123456789ABCDEF, bytes(16), sketch, bands, Fingerprinter(config).schema)


def reference_kernels() -> None:
    """Kernels only the tests and the Python API reach (references, the TF-IDF weightings, a query
    without bands), which several test processes would otherwise compile at the same time."""
    index = BlockIndex(None, k=3)
    index.insert(1, "a")
    index.query(1)
    cut_han_run(WARM_TEXT[:5])
    shingle_hashes(WARM_TEXT)
    weighting = sorted(IDF_WEIGHTINGS)[0]
    idf_features(["地震", "部门"], weighting, jieba_idf(), ["北京"])
    idf_simhash(["地震", "部门"], weighting, jieba_idf(), ["北京"])


def main(index_only: bool) -> None:
    settings = load_settings(env={})  # the defaults, as the test deployments run them
    config, matching = settings.fingerprint_config(), settings.match_settings()
    detector = matching.detector(BlockIndex(None, k=matching.k, bands=config.band_tables, store=MemoryStore()))
    fingerprinter = Fingerprinter(config)
    if index_only:
        warm_up(detector, made_up_fingerprint(config))
        normalize(WARM_TEXT)
        fingerprinter.segmenter.cut(WARM_TEXT)
        reference_kernels()
        return
    index_part = subprocess.Popen([sys.executable, "-m", "tests.harness.warm", INDEX_ONLY])
    doc = parse_document({"id": "warm-up", "text": WARM_TEXT})
    try:
        with mock.patch("stream.fingerprint.fingerprinter.normalize", normalize_reference):
            fingerprinter.fingerprint(doc)
        index_part.wait()
    finally:
        index_part.kill()  # stopped with this process when the run ends first
    # what is still missing: the real fingerprint's own types, its normalization loaded from the cache
    warm_up(detector, *warm_up_fingerprints(fingerprinter))


if __name__ == "__main__":
    main(INDEX_ONLY in sys.argv[1:])
