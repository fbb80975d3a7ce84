"""The edges benchmark measures the product's anchor table: a short page in the middle of a long one is
never proposed by the band tables, and is by shared anchors, then verified by the product's rule."""

import numpy as np

from benchmarks.accuracy_report import pair
from benchmarks.edges import detect
from stream.detect.verdict import CONTAINED
from stream.fingerprint import FingerprintConfig, Fingerprinter, parse_document


def _words(rng: np.random.Generator, n: int, letter: str) -> str:
    return " ".join(f"{letter}{i}" for i in rng.integers(0, 4000, n))


def test_anchors_propose_a_short_page_inside_a_long_one() -> None:
    rng = np.random.default_rng(3)
    page, other = _words(rng, 250, "p"), _words(rng, 250, "q")
    archive = " ".join([_words(rng, 6000, "w"), page, _words(rng, 6000, "w")])  # the page in the middle
    docs = [{"id": "archive", "text": archive}, {"id": "page", "text": page}, {"id": "other", "text": other}]
    config = FingerprintConfig(segmenter="jieba")
    fingerprinter = Fingerprinter(config)
    fps = [fingerprinter.fingerprint(parse_document(d)) for d in docs]
    assert 8 <= len(fps[1].anchors()[0]) <= 30 and len(fps[0].anchors()[0]) > 500  # ~1/16 of each set
    by_bands, none = detect(fps, config, 0.75, 50, anchor_cap=0)
    assert pair("archive", "page") not in by_bands and none == 0  # no band of the archive is the page's
    found, proposed = detect(fps, config, 0.75, 50)
    assert found[pair("archive", "page")] == CONTAINED  # verified on the archive's hash sample
    assert pair("archive", "other") not in found and pair("other", "page") not in found
    assert proposed == 1  # "other" shares next to no anchor with either
