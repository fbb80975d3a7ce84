"""warm_up: after it, every kernel a batch path can meet has a compiled version in the process, the band
runs' on disk and the count of containment on hash samples included."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration  # starts processes of its own (see pyproject.toml)

SCRIPT = """
from stream.detect import Detector, warm_up, warm_up_fingerprints
from stream.fingerprint import FingerprintConfig, Fingerprinter, sketch
from stream.index import BlockIndex
from stream.index.bands import memtable as bandmap
from stream.index.bands import runs
from stream.index.simhash import kernels

names = ["chain_within", "chain_append", "chain_collect", "chain_push", "chain_gather", "chain_relink", "bucket_growth",
         "pairs_within", "within"]
band_names = ["_find_add", "_rehash", "_remove"]
run_names = ["_bloom_add", "_bloom_hits", "_match_span", "_encode", "_decode", "_merge"]
compiled = lambda: {name for name in names if getattr(kernels, name).signatures} | {
    name for name in band_names if getattr(bandmap, name).signatures} | {
    name for name in run_names if getattr(runs, name).signatures}
assert compiled() == set() and not sketch._sample_hits.signatures, compiled()
fingerprinter = Fingerprinter(FingerprintConfig(segmenter="jieba"))
fp, sampled = warm_up_fingerprints(fingerprinter)
assert all(one.sketch.sample is not None for one in sampled)
detector = Detector(BlockIndex(None, k=3, bands=fingerprinter.config.band_tables))
warm_up(detector, fp, sampled)
print(sorted(compiled()))
assert sketch._sample_hits.signatures
assert compiled() == set(names) | set(band_names) | set(run_names), compiled()
assert [m.id for m in detector.probe(fp, (9.0, fp.doc_id))] == ["warm-up-1", "warm-up-2", "warm-up-3"]
# a batch that splits hot roots calls the kernels with the types warm_up compiled them for
import random
rng = random.Random(1)
skewed = BlockIndex(None, k=3, split_mu=0.0, split_cap=8, min_split=4)
for start in range(0, 2000, 200):
    skewed.insert_many([(0xABCD << 48) | rng.getrandbits(48) for _ in range(200)],
                       [f"d{start + i}" for i in range(200)])
assert skewed.stats().splits > 0
assert {name: len(getattr(kernels, name).signatures) for name in names} == dict.fromkeys(names, 1)
"""


def test_warm_up_compiles_every_kernel_of_the_batch_path_and_the_one_document_path() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
