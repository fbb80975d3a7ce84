"""The edges benchmark's anchor what-if: a short page in the middle of a long one is never proposed by
the band tables, and is by shared anchors, then verified by the product's rule."""

import numpy as np

from benchmarks.accuracy_report import pair
from benchmarks.edges import anchors, detect, with_anchors
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
    by_bands = detect(fps, config, 0.75, 50)
    assert pair("archive", "page") not in by_bands  # no band of the archive is the page's
    keys = anchors(docs, fingerprinter, 16)
    assert 8 <= len(keys[1]) <= 30 and len(keys[0]) > 500  # ~1/16 of each set
    found, proposed = with_anchors(by_bands, fps, keys, 0.75, 50)
    assert found[pair("archive", "page")] == CONTAINED  # verified on the archive's hash sample
    assert pair("archive", "other") not in found and pair("other", "page") not in found
    assert proposed == 1  # "other" shares next to no anchor with either
