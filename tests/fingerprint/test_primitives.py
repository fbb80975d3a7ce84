"""Hashing, SimHash, MinHash, sketches and bands: the pure building blocks."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.fingerprint.bands import lsh_bands
from stream.fingerprint.hashing import U64, char_ngram_hashes, fmix64, ngram_hashes
from stream.fingerprint.minhash import EMPTY, densify, oph
from stream.fingerprint.shingles import shingle_hashes, shingle_unit
from stream.fingerprint.simhash import hamming, simhash
from stream.fingerprint.sketch import Sketch, SketchSpec, estimate_jaccard, make_sketch


def test_fmix64_is_murmur3_finalizer() -> None:
    # Reference values of MurmurHash3's fmix64 (0 is a fixed point).
    assert int(fmix64(np.array([0], dtype=U64))[0]) == 0
    assert int(fmix64(np.array([1], dtype=U64))[0]) == 0xB456BCFC34C2CB2C


def test_ngrams_count_and_short_input() -> None:
    assert len(char_ngram_hashes("abcdefg", 5)) == 3
    assert len(char_ngram_hashes("abc", 5)) == 1  # shorter than n: one hash of the whole
    assert len(ngram_hashes(np.empty(0, dtype=U64), 3)) == 0


def test_shingle_unit_by_script() -> None:
    assert shingle_unit("床前明月光，疑是地上霜") == "char"
    assert shingle_unit("the quick brown fox jumps") == "word"
    # whitespace never matters for character shingles (the ground truth removes it)
    assert np.array_equal(shingle_hashes("床前明月光疑是地上霜"), shingle_hashes("床前 明月光\n疑是地上霜"))


def test_simhash_votes() -> None:
    h = np.array([0b1011, 0b0011, 0b1000], dtype=U64)
    assert simhash(h) == 0b1011  # bits set by a majority
    assert simhash(h, np.array([1.0, 5.0, 1.0])) == 0b0011  # the heavy feature wins
    assert simhash(np.empty(0, dtype=U64)) == 0


@settings(max_examples=30, deadline=None)
@given(st.text(alphabet="天地玄黃宇宙洪荒日月盈昃辰宿列張寒來暑往秋收冬藏", min_size=30, max_size=200))
def test_fingerprint_primitives_are_deterministic(text: str) -> None:
    a, b = shingle_hashes(text), shingle_hashes(str(text))
    assert np.array_equal(a, b)
    assert simhash(a) == simhash(b)
    assert lsh_bands(a, 8, 4) == lsh_bands(b, 8, 4)


def test_oph_estimates_jaccard() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2**63, size=3000, dtype=np.uint64)
    b = np.concatenate([a[:2400], rng.integers(0, 2**63, size=600, dtype=np.uint64)])
    truth = 2400 / 3600
    est = float((oph(a, 1024) == oph(b, 1024)).mean())
    assert abs(est - truth) < 0.05
    assert (oph(np.empty(0, np.uint64), 64) == EMPTY).all()
    assert not (oph(a[:10], 64) == EMPTY).any()  # densified


def test_sketch_exact_for_short_and_bbit_for_long() -> None:
    spec = SketchSpec()
    rng = np.random.default_rng(4)
    short = np.unique(rng.integers(0, 2**63, size=60, dtype=np.uint64))
    sk = make_sketch(short, spec)
    assert sk.kind == 0
    assert estimate_jaccard(sk, make_sketch(short[:54], spec), spec) == 54 / 60
    long_a = np.unique(rng.integers(0, 2**63, size=4000, dtype=np.uint64))
    long_b = np.unique(np.concatenate([long_a[:3400], rng.integers(0, 2**63, size=600, dtype=np.uint64)]))
    ska, skb = make_sketch(long_a, spec), make_sketch(long_b, spec)
    assert ska.kind == 1 and len(ska.to_bytes(spec)) <= spec.budget + 5
    truth = 3400 / 4600
    assert abs(estimate_jaccard(ska, skb, spec) - truth) < 0.04
    back = Sketch.from_bytes(ska.to_bytes(spec), spec)
    assert np.array_equal(back.data, ska.data)


def test_bands_collide_for_near_duplicates_only() -> None:
    rng = np.random.default_rng(5)
    a = np.unique(rng.integers(0, 2**63, size=500, dtype=np.uint64))
    near = np.unique(np.concatenate([a[:490], rng.integers(0, 2**63, size=10, dtype=np.uint64)]))
    far = np.unique(rng.integers(0, 2**63, size=500, dtype=np.uint64))
    ba, bn, bf = lsh_bands(a, 16, 5), lsh_bands(near, 16, 5), lsh_bands(far, 16, 5)
    assert sum(x[0] == y[0] for x, y in zip(ba, bn, strict=True)) >= 8
    assert sum(x[0] == y[0] for x, y in zip(ba, bf, strict=True)) == 0
    assert hamming(0b1010, 0b0110) == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.just(-1), st.integers(0, 2**63)), min_size=1, max_size=64))
def test_densify_borrows_from_the_next_nonempty_bin_to_the_right(cells: list[int]) -> None:
    """The vectorized densify equals the rule written as a loop (circular, distance mixed in)."""
    values = np.array([EMPTY if c < 0 else c for c in cells], dtype=np.uint64)
    got = densify(values)
    k = len(values)
    full = [i for i in range(k) if values[i] != EMPTY]
    for i in range(k):
        if values[i] != EMPTY or not full:
            assert got[i] == values[i]
            continue
        nxt = next((j for j in full if j >= i), full[0] + k)
        # array arithmetic: uint64 wraps silently (numpy warns on scalar overflow)
        mixed = values[[nxt % k]] + np.array([nxt - i], dtype=U64) * np.array([0x9E3779B97F4A7C15], dtype=U64)
        assert got[i] == fmix64(mixed)[0]
