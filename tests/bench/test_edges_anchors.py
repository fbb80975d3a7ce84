"""The edges benchmark measures the product's anchor table: a short page in the middle of a long one is
never proposed by the band tables, and is by shared anchors, then verified by the product's rule."""

import numpy as np

from benchmarks.accuracy_report import pair
from benchmarks.edges import detect
from benchmarks.edges_missed import missed_pairs
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


def test_missed_pairs_say_whether_a_pair_was_proposed_and_what_verification_measured() -> None:
    # two same-source pairs: with the anchor table one is reported and one proposed and rejected (a
    # page three tenths of whose words are elsewhere); with the band tables alone neither is proposed
    rng = np.random.default_rng(5)
    page = _words(rng, 500, "p")
    archive = " ".join([_words(rng, 6000, "w"), page, _words(rng, 6000, "w")])
    half = " ".join(page.split()[:350]) + " " + _words(rng, 150, "q")
    docs = [{"id": "archive", "text": archive}, {"id": "page", "text": page}, {"id": "half", "text": half}]
    config = FingerprintConfig(segmenter="jieba")
    fps = [Fingerprinter(config).fingerprint(parse_document(d)) for d in docs]
    truth = {pair("archive", "page"): 0.0, pair("archive", "half"): 0.0}
    texts = {d["id"]: set(d["text"].split()) for d in docs}

    def exact(p: tuple[str, str]) -> tuple[float, float]:
        a, b = texts[p[0]], texts[p[1]]
        return len(a & b) / len(a | b), len(a & b) / min(len(a), len(b))

    for cap, reported in [(64, {pair("archive", "page")}), (0, set())]:
        proposed: dict[tuple[str, str], str] = {}
        found, _ = detect(fps, config, 0.75, 50, anchor_cap=cap, proposed=proposed)
        rows = {tuple(r["pair"]): r for r in missed_pairs(found, truth, fps, docs, proposed, exact)}
        assert set(rows) == set(truth) - reported
        row = rows[pair("archive", "half")]
        assert row["proposed"] == ("anchors" if cap else "no") and row["shingles"][0] > 4096
        assert row["containment_sampled"] and 0.55 < row["containment"] < 0.8 and 0.6 < row["exact_containment"] < 0.75
